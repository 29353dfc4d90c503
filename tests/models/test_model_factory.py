"""The model factory and per-run settings."""

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from graph import ModelNotConfiguredError, RunContext, build_graph, load_chat_model
from graph.settings import DEFAULT_MODEL


def test_no_credentials_is_one_clear_sentence_and_keeps_the_message(tmp_path):
    agent = build_graph(tmp_path)
    run = {"configurable": {"thread_id": "1", "user_id": "Lance"}}

    with pytest.raises(ModelNotConfiguredError) as error:
        agent.invoke({"messages": [HumanMessage("Hi, I'm Lance.")]}, run)

    message = str(error.value)
    assert "OPENAI_API_KEY" in message and "OPENAI_BASE_URL" in message and message.count(". ") == 0
    assert [m.content for m in agent.get_state(run).values["messages"]] == ["Hi, I'm Lance."]
    assert list(agent.store.list_namespaces()) == []


def test_default_model_is_openai_at_temperature_zero(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = load_chat_model(RunContext())
    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.temperature) == (DEFAULT_MODEL, 0)


def test_model_from_env_and_per_run(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MAISTRO_MODEL", "deepseek-chat")
    assert load_chat_model(RunContext()).model_name == "deepseek-chat"
    per_run = RunContext.from_runnable_config({"configurable": {"model": "qwen-plus"}})
    assert load_chat_model(per_run).model_name == "qwen-plus"


def test_runs_with_the_same_settings_share_one_client(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert load_chat_model(RunContext(model="a")) is load_chat_model(RunContext(model="a"))
    assert load_chat_model(RunContext(model="a")) is not load_chat_model(RunContext(model="b"))


def test_openai_compatible_endpoint_needs_no_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    model = load_chat_model(RunContext(model="llama3.1"))
    assert str(model.root_client.base_url).startswith("http://127.0.0.1:11434/v1")


def test_settings_come_from_configurable_with_defaults(monkeypatch):
    monkeypatch.setenv("MAISTRO_DEFAULT_USER", "me")
    settings = RunContext.from_runnable_config(
        {"configurable": {"user_id": "", "max_memory_rounds": 5, "timezone": "Asia/Shanghai", "unknown": 1}}
    )
    assert settings.resolved_user_id == "me"
    assert settings.max_memory_rounds == 5
    assert settings.now_text().split(" ")[0].endswith("+08:00")

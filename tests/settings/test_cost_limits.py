"""The operator owns cost: with auth on a client sets only the time zone, numbers are clamped for everyone,
and no message ever costs more model calls than MAISTRO_MAX_MODEL_CALLS."""

import pytest
from langchain_core.messages import HumanMessage

from graph import build_graph, close_graph
from graph.backends.model import ModelCallLimitError
from graph.memory.kinds import TODO
from graph.memory.store import namespace
from graph.run_context import AUTH_USER_KEY, RunContext
from testing.helpers import config, todos
from testing.scripted_model import calls, route, say, todo

GREEDY = {"model": "o1-pro", "role": "Leak.", "max_memory_rounds": 100, "collection_prompt_limit": 10**6, "timezone": "Asia/Tokyo"}


def settings(**configurable) -> RunContext:
    return RunContext.from_runnable_config({"configurable": configurable})


def test_with_auth_a_client_sets_only_the_time_zone(monkeypatch):
    monkeypatch.setenv("MAISTRO_MODEL", "operator-model")
    chosen = settings(**GREEDY, **{AUTH_USER_KEY: {"identity": "alice"}})
    assert (chosen.model, chosen.role, chosen.max_memory_rounds, chosen.collection_prompt_limit) == (
        "operator-model",
        RunContext().role,
        3,
        30,
    )
    assert (chosen.timezone, chosen.resolved_user_id) == ("Asia/Tokyo", "alice")


def test_numbers_are_clamped_for_every_client():
    chosen = settings(**GREEDY)
    assert (chosen.model, chosen.max_memory_rounds, chosen.collection_prompt_limit) == ("o1-pro", 5, 100)
    assert settings(max_memory_rounds=-3, collection_update_limit="many").max_memory_rounds == 0
    assert settings(collection_update_limit="many").collection_update_limit == RunContext().collection_update_limit


def test_the_limits_former_names_still_set_them_and_the_current_names_win():
    former = settings(todo_prompt_limit=7, todo_update_limit=10**6)
    assert (former.collection_prompt_limit, former.collection_update_limit) == (7, 50)
    both = RunContext.from_runnable_config(
        {"configurable": {"todo_prompt_limit": 7, "collection_prompt_limit": 9}}, context={"todo_update_limit": 4}
    )
    assert (both.collection_prompt_limit, both.collection_update_limit) == (9, 4)
    assert settings(todo_prompt_limit=7, **{AUTH_USER_KEY: {"identity": "alice"}}).collection_prompt_limit == 30
    assert RunContext(todo_update_limit=4).collection_update_limit == 4


def test_a_run_context_with_a_former_limit_name_bounds_the_prompt(model, tmp_path):
    agent = build_graph(tmp_path / "data", chat_model=lambda _: model)
    for n in range(3):
        agent.store.put(namespace(TODO, "Lance"), f"t{n}", {"task": f"Task {n}", "solutions": ["x"], "status": "not started"}, index=False)
    model.add("task_maistro", say("Hello."))
    agent.invoke({"messages": [HumanMessage("Hello")]}, config(), context={"todo_prompt_limit": 1})
    close_graph(agent)

    assert "(Not shown: 2 more open and 0 done or archived items." in model.calls_in("task_maistro")[0].system


def test_a_time_zone_that_does_not_exist_is_one_sentence():
    with pytest.raises(ValueError, match="timezone 'Mars/Base' is not a known IANA time zone"):
        settings(timezone="Mars/Base")


def test_no_message_costs_more_model_calls_than_the_operator_allows(agent, model, monkeypatch):
    monkeypatch.setenv("MAISTRO_MAX_MODEL_CALLS", "3")
    model.add("task_maistro", route("todo"), route("todo"), say("Saved."))
    model.add("update_todos", calls(todo("First", solutions=["a"])), calls(todo("Second", solutions=["b"])))

    with pytest.raises(ModelCallLimitError, match="more than 3 model calls"):
        agent.invoke({"messages": [HumanMessage("Add two tasks")]}, config())

    assert len(model.calls) == 3 and list(todos(agent)) == ["First"]
    assert agent.get_state(config()).values["messages"][0].content == "Add two tasks"
    monkeypatch.setenv("MAISTRO_MAX_MODEL_CALLS", "40")
    model.script.clear()
    model.add("task_maistro", say("Fine now."))
    assert agent.invoke({"messages": [HumanMessage("Hello")]}, config())["messages"][-1].content == "Fine now."

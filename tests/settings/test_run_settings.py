"""A run's settings and ids are resolved once, from LangGraph's run `context=` or the tutorial's `configurable`."""

import pytest
from langchain_core.messages import HumanMessage
from langgraph.runtime import RunControl

from graph import RunContext
from graph.run_context import AUTH_USER_KEY
from testing.helpers import todos, turn
from testing.scripted_model import calls, profile, route, say, todo

DENTIST = "Book a dentist appointment"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The configs the settings parser was called with during the test."""
    seen: list[dict] = []
    parse = RunContext.from_runnable_config.__func__

    def counted(cls, config=None, *args, **kwargs):
        seen.append(config)
        return parse(cls, config, *args, **kwargs)

    monkeypatch.setattr(RunContext, "from_runnable_config", classmethod(counted))
    return seen


def script_memory_turn(model, task: str) -> None:
    """One message that routes to the ToDo update, which adds `task`, then answers: three node runs."""
    model.add("task_maistro", route("todo"), say("Added it."))
    model.add("update_todos", calls(todo(task, solutions=["Call the office"])))


def test_settings_are_resolved_once_per_run(agent, model, parses):
    script_memory_turn(model, DENTIST)
    thread = turn(agent, "Remind me to book a dentist appointment.")

    assert [m.type for m in thread] == ["human", "ai", "tool", "ai"]
    assert len(parses) == 1

    script_memory_turn(model, "Renew the passport")
    turn(agent, "And renew my passport.", user_id="Ada")

    assert len(parses) == 2, "a new run resolves its own settings"
    assert list(todos(agent)) == [DENTIST] and list(todos(agent, "Ada")) == ["Renew the passport"]


def test_parallel_updates_share_the_runs_settings(agent, model, parses):
    model.add("task_maistro", route("user", "todo"), say("Noted the move, and I added the dentist."))
    model.add("update_profile", calls(profile(location="Oakland")))
    model.add("update_todos", calls(todo(DENTIST, solutions=["Call Oakland Dental"])))

    turn(agent, "I moved to Oakland and need to book a dentist.")

    assert len(parses) == 1


def test_a_control_passed_to_two_runs_does_not_carry_the_first_runs_user(agent, model, parses):
    control = RunControl()
    for user in ("Ada", "Grace"):
        script_memory_turn(model, f"{user}'s task")
        agent.invoke(
            {"messages": [HumanMessage("Add my task.")]},
            {"configurable": {"thread_id": user, "user_id": user}},
            control=control,
        )

    assert len(parses) == 2
    assert list(todos(agent, "Ada")) == ["Ada's task"] and list(todos(agent, "Grace")) == ["Grace's task"]


def test_context_sets_the_run_as_configurable_does(agent, model):
    script_memory_turn(model, DENTIST)
    agent.invoke(
        {"messages": [HumanMessage("Remind me to book a dentist appointment.")]},
        {"configurable": {"thread_id": "ada"}},
        context={"user_id": "Ada", "max_memory_rounds": 1},
    )
    script_memory_turn(model, "Renew the passport")
    agent.invoke(
        {"messages": [HumanMessage("And renew my passport.")]},
        {"configurable": {"thread_id": "grace"}},
        context=RunContext(user_id="Grace"),
    )
    script_memory_turn(model, "Water the plants")
    turn(agent, "Water the plants, please.")

    assert list(todos(agent, "Ada")) == [DENTIST]
    assert list(todos(agent, "Grace")) == ["Renew the passport"]
    assert list(todos(agent)) == ["Water the plants"]


def test_context_wins_over_configurable_and_is_checked_the_same_way():
    settings = RunContext.from_runnable_config(
        {"configurable": {"user_id": "Lance", "max_memory_rounds": 2, "role": "A butler."}},
        {"user_id": "Ada", "max_memory_rounds": 99, "unknown": 1},
    )
    assert (settings.resolved_user_id, settings.max_memory_rounds, settings.role) == ("Ada", 5, "A butler.")

    with pytest.raises(ValueError, match="^timezone 'Mars/Base' is not a known IANA time zone"):
        RunContext.from_runnable_config({"configurable": {}}, RunContext(timezone="Mars/Base"))


def test_with_auth_on_a_context_cannot_name_the_user_or_the_operators_settings():
    settings = RunContext.from_runnable_config(
        {"configurable": {AUTH_USER_KEY: {"identity": "alice"}}},
        {"user_id": "mallory", "model": "gpt-expensive", "max_memory_rounds": 5, "timezone": "Asia/Shanghai"},
    )
    defaults = RunContext()
    assert settings.resolved_user_id == "alice"
    assert (settings.model, settings.max_memory_rounds) == (defaults.model, defaults.max_memory_rounds)
    assert settings.timezone == "Asia/Shanghai"

    settings = RunContext.from_runnable_config({"configurable": {}}, {AUTH_USER_KEY: {"identity": "alice"}})
    assert settings.resolved_user_id == defaults.resolved_user_id, "only the server's configurable names the user"

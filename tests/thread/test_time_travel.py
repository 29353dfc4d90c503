"""Time travel on the kept turns, on SQLite and PostgreSQL: history, forks, `update_state` and replays behave as
with LangGraph's own savers (an in-memory reference graph plays the same turns), and a checkpoint the retention
policy deleted is refused with one error that leaves the thread as it was."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graph import DEFAULT_MEMORY_KINDS, build_graph, close_graph
from graph.agent import graph_builder
from graph.backends.checkpoints import CheckpointNotKept, PruningSqliteSaver
from graph.runtime import GraphRuntime
from testing.helpers import config, todos
from testing.scripted_session import task_keeper

TURNS = 4
CHECKPOINTS_PER_TURN = 5


@pytest.fixture
def reference():
    """The same agent on LangGraph's in-memory saver and store, which keep every checkpoint."""
    model = task_keeper()
    return graph_builder(GraphRuntime(DEFAULT_MEMORY_KINDS), lambda _settings: model).compile(checkpointer=InMemorySaver(), store=InMemoryStore())


@pytest.fixture
def keeper(agent, model):
    """The `agent` fixture with a model that files every "Remind me: X" as the ToDo X."""
    model.standing.update(task_keeper().standing)
    return agent


def play(graph, turns: int, start: int = 0, at: dict | None = None) -> dict:
    """Play `turns` turns (the first from the checkpoint `at`, when given); the last turn's result."""
    result = {}
    for n in range(start, start + turns):
        result = graph.invoke({"messages": [HumanMessage(f"Remind me: task {n}")]}, at or config())
        at = None
    return result


def history(graph) -> list:
    """The thread's snapshots, newest first."""
    return list(graph.get_state_history(config()))


def shape(snapshots) -> list[tuple]:
    """What a history says, without its ids and times: each snapshot's source, step, messages and next nodes."""
    return [
        (s.metadata["source"], s.metadata["step"], [m.text for m in s.values.get("messages", [])], s.next)
        for s in snapshots
    ]


def turn_end(graph, messages: int):
    """The snapshot that ended the turn after which the thread held `messages` messages."""
    return next(s for s in history(graph) if not s.next and len(s.values["messages"]) == messages)


def turn_start(graph, messages: int):
    """The input snapshot of the turn that started with `messages` messages in the thread."""
    return next(s for s in history(graph) if s.metadata["source"] == "input" and len(s.values["messages"]) == messages)


def texts(state: dict) -> list[str]:
    return [m.text for m in state["messages"]]


def reopened(agent, model):
    """A second graph on the agent's storage, as another process opens it (pruning every thread on open)."""
    saver = agent.checkpointer
    if isinstance(saver, PruningSqliteSaver):
        path = saver.conn.execute("PRAGMA database_list").fetchone()[2]
        return build_graph(path.rsplit("/", 1)[0], chat_model=lambda _settings: model)
    return build_graph(database_url=saver.conn.conninfo, chat_model=lambda _settings: model)


def test_history_lists_every_checkpoint_of_the_kept_turns_and_after_reopening(keeper, model, reference):
    play(keeper, TURNS)
    play(reference, TURNS)

    expected = shape(history(reference))
    assert len(expected) == CHECKPOINTS_PER_TURN * TURNS
    assert shape(history(keeper)) == expected
    again = reopened(keeper, model)
    try:
        assert shape(history(again)) == expected
    finally:
        close_graph(again)


def test_a_fork_from_turn_two_continues_turn_two(keeper, reference):
    for graph in (keeper, reference):
        play(graph, TURNS)
    tip = keeper.get_state(config())

    forked = play(keeper, 1, start=10, at=turn_end(keeper, 8).config)
    expected = play(reference, 1, start=10, at=turn_end(reference, 8).config)

    assert texts(forked) == texts(expected) and len(forked["messages"]) == 12
    assert texts(keeper.get_state(config()).values) == texts(forked), "the fork is the thread's current state"
    assert shape(history(keeper)) == shape(history(reference))
    assert texts(keeper.get_state(tip.config).values) == texts(tip.values), "the first branch is still there"
    assert len(play(keeper, 1, start=11)["messages"]) == 16, "the next turn goes on from the fork"


def test_update_state_on_a_past_checkpoint_branches_from_it(keeper, reference):
    note = {"messages": [AIMessage("A note on turn two.")]}
    for graph in (keeper, reference):
        play(graph, TURNS)
        graph.update_state(turn_end(graph, 8).config, note, as_node="task_maistro")

    updated = keeper.get_state(config()).values
    assert texts(updated) == texts(reference.get_state(config()).values)
    assert len(updated["messages"]) == 9 and updated["messages"][-1].text == "A note on turn two."
    assert shape(history(keeper)) == shape(history(reference))
    assert len(play(keeper, 1, start=10)["messages"]) == 13


def test_invoke_none_replays_a_turn_from_its_start(keeper, model, reference):
    for graph in (keeper, reference):
        play(graph, TURNS)
    asked = len(model.calls_in("task_maistro"))

    replayed = keeper.invoke(None, turn_start(keeper, 8).config)
    expected = reference.invoke(None, turn_start(reference, 8).config)

    assert texts(replayed) == texts(expected) and len(replayed["messages"]) == 12
    assert len(model.calls_in("task_maistro")) == asked + 2, "the turn ran again"
    assert texts(keeper.get_state(config()).values) == texts(replayed)
    assert shape(history(keeper)) == shape(history(reference))


def test_a_checkpoint_no_longer_kept_is_refused_and_the_thread_stays_as_it_was(keeper, model):
    keeper.checkpointer.keep_turns = 2
    play(keeper, 1)
    first = keeper.get_state(config()).config
    first_id = first["configurable"]["checkpoint_id"]
    play(keeper, 4, start=1)
    before = shape(history(keeper))
    asked = len(model.calls)
    assert [s[0] for s in before].count("input") == 2, "two turns are kept"

    attempts = {
        "fork": lambda graph: graph.invoke({"messages": [HumanMessage("Remind me: forked")]}, first),
        "replay": lambda graph: graph.invoke(None, first),
        "update": lambda graph: graph.update_state(first, {"messages": [AIMessage("note")]}, as_node="task_maistro"),
        "read": lambda graph: graph.get_state(first),
    }
    for name, attempt in attempts.items():
        with pytest.raises(CheckpointNotKept, match=f"Checkpoint {first_id} of thread '1' is no longer kept"):
            attempt(keeper)
        assert shape(history(keeper)) == before, name
    assert len(model.calls) == asked and len(todos(keeper)) == 5
    assert len(keeper.get_state(config()).values["messages"]) == 20

    again = reopened(keeper, model)
    try:
        with pytest.raises(CheckpointNotKept, match=first_id):
            attempts["fork"](again)
        never_written = config(checkpoint_id=str(uuid6()))
        assert again.checkpointer.get_tuple(never_written) is None, "an id the thread never had is not 'pruned'"
    finally:
        close_graph(again)
    assert shape(history(keeper)) == before


def test_pruning_keeps_the_latest_checkpoint_of_every_branch(keeper):
    play(keeper, 3)
    old_tip = keeper.get_state(config())
    play(keeper, 3, start=10, at=turn_end(keeper, 4).config)
    keeper.checkpointer.keep_turns = 2
    play(keeper, 1, start=13)

    assert len(keeper.get_state(config()).values["messages"]) == 20
    assert [s.metadata["source"] for s in history(keeper)].count("input") == 2
    assert texts(keeper.get_state(old_tip.config).values) == texts(old_tip.values)
    continued = play(keeper, 1, start=20, at=old_tip.config)
    assert len(continued["messages"]) == 16, "the first branch goes on from its latest checkpoint"


def test_langgraphs_own_prune_keeps_the_refusal_right(fresh_database, model):
    model.standing.update(task_keeper().standing)
    agent = build_graph(database_url=fresh_database, chat_model=lambda _settings: model)
    try:
        play(agent, 2)
        first = turn_end(agent, 4).config
        agent.checkpointer.prune(["1"], strategy="keep_latest")
        with pytest.raises(CheckpointNotKept, match=first["configurable"]["checkpoint_id"]):
            agent.invoke({"messages": [HumanMessage("Remind me: forked")]}, first)
        assert len(agent.get_state(config()).values["messages"]) == 8

        agent.checkpointer.prune(["1"], strategy="delete")
        assert agent.checkpointer.get_tuple(first) is None, "a deleted thread has no checkpoints left to refuse"
    finally:
        close_graph(agent)

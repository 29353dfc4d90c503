"""User ids: every id up to 256 characters without control characters works on SQLite and PostgreSQL; any
other is refused up front with one sentence, in a graph run and in every `maistro` command."""

import sys

import pytest

from graph.app.cli import main
from graph.memory.admin import export_memories, forget_user, import_memories, user_items
from graph.memory.store import MAX_USER_ID_LENGTH, InvalidUserIdError, user_from_label, user_label
from testing.helpers import config, remember, todos, turn
from testing.scripted_model import calls, route, say, todo

# The most characters, of the kinds that take the most bytes once stored: a 4-byte emoji, and '.', '*' and '%',
# which the label percent-encodes ('*' and '%' also look like wildcards to the stores).
LONGEST = ("🦊.*%_" * 52)[:MAX_USER_ID_LENGTH]


@pytest.mark.parametrize(
    "user_id, sentence",
    [
        ("x" * 257, "The user id is 257 characters long; user ids may have at most 256."),
        ("x" * 10_000, "The user id is 10,000 characters long; user ids may have at most 256."),
        ("a\x00b", "The user id contains a control character"),
        ("two\nlines", "The user id contains a control character"),
        ("tab\there", "The user id contains a control character"),
        ("del\x7f", "The user id contains a control character"),
        ("next line\x85", "The user id contains a control character"),
        ("half \ud83e", "or a lone surrogate; user ids may not."),
        ("", "The user id is empty"),
    ],
)
def test_ids_the_stores_cannot_hold_are_refused_with_one_sentence(user_id, sentence):
    with pytest.raises(InvalidUserIdError) as refused:
        user_label(user_id)
    assert str(refused.value).startswith(sentence) or sentence in str(refused.value)
    assert str(refused.value).endswith(".") and "\n" not in str(refused.value)


def test_the_longest_id_works_and_one_more_character_is_refused_with_the_message_kept(agent, model):
    assert len(LONGEST) == MAX_USER_ID_LENGTH and user_from_label(user_label(LONGEST)) == LONGEST
    remember(agent.store, "alice")
    alice = export_memories(agent.store, "alice")
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Pay rent", solutions=["Bank app"])))

    turn(agent, "Remind me to pay rent.", user_id=LONGEST, thread_id="longest")
    assert list(todos(agent, LONGEST)) == ["Pay rent"]
    import_memories(agent.store, LONGEST, export_memories(agent.store, "alice"))
    # A ToDo, its history entry and source, alice's four documents, the import's four history entries, the sources
    # of its ToDos (2), instructions (1) and filled profile fields (4), and the done log's counts (the import looked
    # for done ToDos to move, and one is on the list).
    assert len(user_items(agent.store, LONGEST)) == 18 and export_memories(agent.store, "alice") == alice

    too_long = LONGEST + "x"
    with pytest.raises(InvalidUserIdError, match="257 characters long"):
        turn(agent, "Remind me to pay rent.", user_id=too_long, thread_id="too-long")
    messages = agent.get_state(config(too_long, "too-long")).values["messages"]
    assert [m.content for m in messages] == ["Remind me to pay rent."], "the message stays in the thread"

    receipt = forget_user(agent.store, agent.checkpointer, LONGEST)
    assert (receipt.memories, receipt.threads) == (18, 1)
    assert export_memories(agent.store, "alice") == alice, "no id reaches another user's memories"


def test_a_nul_byte_stops_the_turn_with_one_sentence(agent):
    with pytest.raises(InvalidUserIdError, match="control character"):
        turn(agent, "Hello", user_id="a\x00b", thread_id="nul")
    assert [m.content for m in agent.get_state(config("a\x00b", "nul")).values["messages"]] == ["Hello"]


@pytest.mark.parametrize(
    "command",
    [["todos"], ["profile", "--json"], ["export"], ["history"], ["undo"], ["forget", "--yes"], ["chat"]],
)
def test_every_command_refuses_a_bad_user_id_with_one_line(command, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")  # `chat` gets past its model check to the user id
    monkeypatch.setattr(sys, "argv", ["maistro", *command, "--user", "x" * 300])

    with pytest.raises(SystemExit) as exited:
        main()

    assert exited.value.code == 1
    assert capsys.readouterr().err == "The user id is 300 characters long; user ids may have at most 256.\n"

"""The secrets issue 31 found stored — JSON, "pw", arrows, passphrases, Chinese numerals, bare card numbers,
IBANs, SSNs, other separators, invisible and look-alike characters, German, Spanish, French, Japanese and
Korean — are kept out of every memory write: the agent's extraction and the history's quoted message, an
import, the memory page. The ordinary ToDos written around them (dates, order and phone numbers, ToDos in
those languages) are stored as written on the same paths."""

import json

from graph.memory.admin import EXPORT_FORMAT, export_memories, import_memories
from graph.memory.changes import list_history
from graph.memory.kinds import TODO
from graph.server.memory_page import add_document
from testing.helpers import todos, turn
from testing.scripted_model import calls, route, say, todo
from testing.secret_corpus import ORDINARY_CASES, SECRET_CASES, Case
from testing.secret_probes import PROBE_SECRETS
from testing.secret_texts import WIDER_ORDINARY, WIDER_SECRETS

# The issue's examples and their kin, the generated bare card numbers, and the probes the filter catches.
SECRETS = [
    case for case in SECRET_CASES
    if (case.label, case.marked) in [*WIDER_SECRETS, *PROBE_SECRETS] or case.label == "card/bare"
]
ORDINARY = [case for case in ORDINARY_CASES if (case.label, case.marked) in WIDER_ORDINARY]


def secret_values(cases: list[Case]) -> list[str]:
    """The secrets the cases hold, as the user wrote them."""
    return [value for case in cases for value in case.marked.split("«")[1:] for value in [value.split("»")[0]]]


def chat(agent, model, cases: list[Case]) -> list[list]:
    """Each case told to the agent in a thread of its own; the model saves it as a ToDo (task and solution)."""
    threads = []
    for index, case in enumerate(cases):
        model.add("task_maistro", route("todo"), say("Saved."))
        model.add("update_todos", calls(todo(case.text, solutions=[case.text])))
        threads.append(turn(agent, case.text, thread_id=f"t{index}"))
    return threads


def test_the_issues_examples_and_their_neighbours_are_in_the_corpus():
    assert len(SECRETS) >= len(WIDER_SECRETS) + len(PROBE_SECRETS) and len(ORDINARY) == len(WIDER_ORDINARY) >= 12
    assert {"iban", "ssn", "obfuscated", "card/bare", "card/separators", "password/ko"} <= {case.label for case in SECRETS}


def test_a_secret_told_in_chat_is_kept_out_of_the_todo_and_the_history_but_stays_in_the_thread(agent, model):
    threads = chat(agent, model, SECRETS)

    stored = todos(agent)
    assert set(stored) == {case.expected for case in SECRETS}, "(several redact to the same task)"
    assert all(document["solutions"] == [document["task"]] for document in stored.values())
    assert sorted(entry["message"] for entry in list_history(agent.store, "Lance")) == sorted(
        case.expected for case in SECRETS
    ), "the history quotes the message redacted"
    exported = export_memories(agent.store, "Lance")
    written = json.dumps([[*exported["todo"].values()], [(e["message"], e["after"]) for e in exported["history"].values()]],
                         ensure_ascii=False)
    assert [value for value in secret_values(SECRETS) if value in written] == []
    assert [thread[0].content for thread in threads] == [case.text for case in SECRETS], "the thread keeps what was said"
    answers = " ".join(message.content for thread in threads for message in thread if message.type == "tool")
    for kind in ("IBAN", "social security number", "card number", "password", "PIN"):
        assert f"Not saved: {kind}." in answers, kind


def test_a_secret_in_an_import_is_kept_out(agent):
    data = {"format": EXPORT_FORMAT, "todo": {f"k{i}": {"task": c.text, "solutions": [c.text]} for i, c in enumerate(SECRETS)}}

    import_memories(agent.store, "Grace", data)

    stored = todos(agent, "Grace")
    assert set(stored) == {case.expected for case in SECRETS}
    assert all(document["solutions"] == [document["task"]] for document in stored.values())


def test_a_secret_written_on_the_memory_page_is_kept_out(agent):
    saved = [add_document(agent.store, "Page", TODO, {"task": case.text, "solutions": [case.text]}) for case in SECRETS]

    assert [result["value"]["task"] for result in saved] == [case.expected for case in SECRETS]
    assert all(result["secrets"] for result in saved), "the page is told what was not saved"
    assert set(todos(agent, "Page")) == {case.expected for case in SECRETS}


def test_plain_todos_are_stored_as_written_through_chat_import_and_the_page(agent, model):
    chat(agent, model, ORDINARY)
    data = {"format": EXPORT_FORMAT, "todo": {f"k{i}": {"task": c.text, "solutions": [c.text]} for i, c in enumerate(ORDINARY)}}
    import_memories(agent.store, "Grace", data)
    for case in ORDINARY:
        add_document(agent.store, "Page", TODO, {"task": case.text, "solutions": [case.text]})

    texts = sorted(case.text for case in ORDINARY)
    for user in ("Lance", "Grace", "Page"):
        stored = todos(agent, user)
        assert sorted(stored) == texts, user
        assert all(document["solutions"] == [task] for task, document in stored.items()), user
    assert sorted(entry["message"] for entry in list_history(agent.store, "Lance")) == texts

"""A case's seed: on this agent it goes in through the import, so ToDos finished weeks ago start in the done log; on
the tutorial's graph, which has no done log, they stay on its list."""

from datetime import date, datetime, timezone

from graph.eval.cases import load_cases
from graph.eval.runner import EVAL_USER, open_target
from graph.eval.seed import seed_memory
from graph.memory.done_log import read_counts, read_log
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, kind_named
from graph.memory.store import namespace, search_all
from testing.scripted_model import ScriptedChatModel

TODAY = date(2026, 3, 10)  # a past day: the finishes it dates are long past on any clock


def test_a_seed_of_todos_finished_weeks_ago_lands_in_the_done_log_by_month_and_the_open_ones_on_the_list():
    (case,) = load_cases("done-log-not-reopened")
    (counted,) = load_cases("done-log-last-month")
    todo = kind_named(DEFAULT_MEMORY_KINDS, "todo")
    with open_target("maistro", ScriptedChatModel()) as compiled:
        seed_memory(compiled.store, "maistro", case, EVAL_USER, TODAY)
        seed_memory(compiled.store, "maistro", counted, "counted-user", TODAY)
        listed = [item.value for item in search_all(compiled.store, namespace(todo, EVAL_USER))]
        (logged,) = read_log(compiled.store, EVAL_USER, todo)
        months, _ = read_counts(compiled.store, "counted-user", todo)
    assert [(value["task"], value["deadline"][:10]) for value in listed] == [("Water the plants", "2026-03-13")]
    assert logged.document["task"] == "Renew passport"
    assert logged.finished == datetime(2026, 2, 1, 12, tzinfo=timezone.utc)
    assert months == {"2026-01": 2, "2026-02": 4}


def test_on_the_tutorials_graph_a_seed_stays_on_its_list_as_its_own_update_node_writes_todos():
    (case,) = load_cases("done-log-not-reopened")
    with open_target("tutorial", ScriptedChatModel()) as compiled:
        seed_memory(compiled.store, "tutorial", case, EVAL_USER, TODAY)
        stored = [item.value for item in compiled.store.search(("todo", EVAL_USER))]
    assert sorted(value["task"] for value in stored) == ["Renew passport", "Water the plants"]
    assert all("completed_at" not in value and value["solutions"] for value in stored)

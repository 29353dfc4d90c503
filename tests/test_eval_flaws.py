"""Each flawed player loses exactly what its flaw should cost, compared with the oracle on the same cases and graph."""

from dataclasses import replace

import pytest

from graph.eval.cases import Case
from tests.support.eval_runs import cases, play, total


def removals(suite: list[Case]) -> int:
    return sum(len(turn.play.todos.remove) for case in suite for turn in case.turns if turn.play.todos)


def expects_nothing(case: Case) -> bool:
    return not (case.expect.profile or case.expect.todos or case.expect.instructions)


def chinese_turns(suite: list[Case], routing_only: bool = False) -> int:
    return sum(turn.language == "zh" and (not routing_only or bool(turn.play.update_types)) for case in suite for turn in case.turns)


def test_a_model_that_never_routes_keeps_nothing_and_recalls_nothing_on_a_new_thread():
    suite = cases("single-*,update-*,recall-*,none-*")
    oracle, flawed = total(play(suite)), total(play(suite, flaw="never-routes"))
    assert flawed.correct == sum(expects_nothing(case) for case in suite) < oracle.correct
    assert flawed.mentioned == sum(len(turn.mention) for case in suite for turn in case.threads[0]) == 0
    assert flawed.wrong == flawed.spurious == flawed.duplicates == flawed.memory_turns == 0
    assert (flawed.facts, flawed.mentions, flawed.secrets_kept, flawed.right_language) == (
        oracle.facts, oracle.mentions, oracle.secrets_kept, oracle.right_language
    )


def test_a_model_that_duplicates_inserts_loses_one_point_per_expected_todo_and_nothing_else():
    suite = cases("single-todo,multi-two-todos,completion-deletion,dates")
    oracle, flawed = total(play(suite)), total(play(suite, flaw="duplicate-inserts"))
    assert flawed.duplicates == sum(len(case.expect.todos) for case in suite) > 0
    assert replace(flawed, duplicates=0, model_calls=0, prompt_tokens=0, completion_tokens=0) == replace(
        oracle, model_calls=0, prompt_tokens=0, completion_tokens=0
    )


@pytest.mark.parametrize("graph", ["maistro", "tutorial"])
def test_a_model_that_ignores_deletions_keeps_one_spurious_todo_per_removal(graph):
    suite = cases("completion-deletion")
    oracle, flawed = total(play(suite)), total(play(suite, graph, flaw="ignores-deletions"))
    assert flawed.spurious == removals(suite) == 2
    emptied = sum(expects_nothing(case) and any(t.play.todos and t.play.todos.remove for t in case.turns) for case in suite)
    assert flawed.correct == oracle.correct - emptied
    assert (flawed.facts, flawed.wrong, flawed.duplicates, flawed.mentioned) == (oracle.facts, 0, 0, oracle.mentioned)


def test_a_model_that_answers_in_english_loses_every_chinese_reply_and_nothing_else():
    suite = cases("chinese,single-name")
    oracle, flawed = total(play(suite)), total(play(suite, flaw="wrong-language"))
    assert oracle.right_language - flawed.right_language == chinese_turns(suite) == 7
    assert (flawed.correct, flawed.mentioned, flawed.spurious, flawed.facts) == (
        oracle.correct, oracle.mentioned, oracle.spurious, oracle.facts
    )


def test_a_model_that_stores_secrets_loses_every_secret_on_the_tutorials_graph_and_none_on_this_agents():
    suite = cases("secrets")
    tutorial_oracle, tutorial_flawed = total(play(suite, "tutorial")), total(play(suite, "tutorial", "stores-secret"))
    assert tutorial_oracle.secrets_kept == tutorial_oracle.secrets == 4
    assert tutorial_flawed.secrets_kept == 0
    assert (tutorial_flawed.correct, tutorial_flawed.spurious, tutorial_flawed.wrong) == (tutorial_oracle.correct, 0, 0)
    # This agent redacts secrets before they reach the store, so the same flawed model loses nothing here.
    ours = total(play(suite, flaw="stores-secret"))
    assert (ours.secrets_kept, ours.correct, ours.spurious) == (4, tutorial_oracle.correct, 0)


def test_a_model_that_writes_tool_calls_as_text_costs_what_never_routing_costs_on_the_tutorials_graph():
    suite = cases("single-*,chinese")
    never, as_text = total(play(suite, "tutorial", "never-routes")), total(play(suite, "tutorial", "text-tool-calls"))
    assert (as_text.correct, as_text.mentioned, as_text.spurious, as_text.memory_turns) == (
        never.correct, never.mentioned, never.spurious, 0
    )
    # The calls written out are what the user reads: the Chinese replies that carried them read as English.
    assert never.right_language - as_text.right_language == chinese_turns(suite, routing_only=True) == 5

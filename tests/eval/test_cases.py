"""The eval suite's cases, their loader, relative dates and the scoring rules, without running a graph."""

import json
from datetime import date

import pytest

from graph.eval.cases import CATEGORIES, CaseError, ExpectedTodo, load_case, load_cases
from graph.eval.dates import DateSpecError, resolve_date
from graph.eval.scoring import reply_language, score_instructions, score_profile, score_todos


def test_the_suite_has_forty_cases_covering_every_category():
    suite = load_cases()
    assert len(suite) >= 40
    per_category = {category: sum(case.category == category for case in suite) for category in CATEGORIES}
    assert all(count >= 3 for count in per_category.values()), per_category


def test_every_user_message_is_unique_in_the_suite_so_an_endpoint_player_can_tell_the_cases_apart():
    said = [turn.user for case in load_cases() for turn in case.turns]
    assert len(said) == len(set(said))


def test_the_long_list_cases_go_past_a_page_of_ten():
    for case in load_cases("long-list"):
        added = sum(len(turn.play.todos.add) for turn in case.turns if turn.play.todos)
        assert added > 10, case.id


def test_a_pattern_selects_by_id_or_category_and_one_matching_nothing_says_so():
    assert {case.category for case in load_cases("chinese")} == {"chinese"}
    assert [case.id for case in load_cases("single-name, date-tomorrow")] == ["date-tomorrow", "single-name"]
    with pytest.raises(CaseError, match="No eval case matches 'nothing-\\*'"):
        load_cases("nothing-*")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "cannot be read"),
        (json.dumps({"id": "bad", "category": "nope", "description": "", "threads": [[]]}), "is not valid \\(category"),
        (json.dumps({"id": "other", "category": "dates", "description": "", "threads": [[{"user": "a", "play": {"reply": "b"}}]]}), "its file name"),
        (
            json.dumps({"id": "bad", "category": "dates", "description": "", "threads": [[
                {"user": "a", "play": {"reply": "b", "todos": {"add": [{"task": "x", "deadline": "someday"}]}}}]]}),
            "'someday' is not one of",
        ),
        (
            json.dumps({"id": "bad", "category": "dates", "description": "", "threads": [[
                {"user": "a", "play": {"reply": "b"}}, {"user": "a", "play": {"reply": "c"}}]]}),
            "no user message may repeat",
        ),
        (
            json.dumps({"id": "bad", "category": "done-log", "description": "", "seed": {"todos": [
                {"task": "x", "completed": "month-1"}]}, "threads": [[{"user": "a", "play": {"reply": "b"}}]]}),
            "has a completion date but is not done",
        ),
        (
            json.dumps({"id": "bad", "category": "done-log", "description": "", "seed": {"todos": [
                {"task": "x", "status": "done", "completed": "last year"}]}, "threads": [[{"user": "a", "play": {"reply": "b"}}]]}),
            "'last year' is not one of",
        ),
    ],
)
def test_a_broken_case_file_is_one_sentence_naming_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CaseError, match=f"^The eval case bad.json .*{message}"):
        load_case(path)


def test_relative_dates_are_counted_from_the_runs_today():
    monday = date(2026, 11, 30)
    assert resolve_date("today", monday) == monday
    assert resolve_date("today+3", monday) == date(2026, 12, 3)
    assert resolve_date("next friday", monday) == date(2026, 12, 4)
    assert resolve_date("next monday", monday) == date(2026, 12, 7)
    assert resolve_date("end of november", monday) == date(2026, 11, 30)
    assert resolve_date("end of november", date(2026, 12, 1)) == date(2027, 11, 30)
    assert resolve_date("month-0", monday) == date(2026, 11, 1)
    assert resolve_date("month-1", monday) == date(2026, 10, 1)
    assert resolve_date("month-2", date(2027, 1, 31)) == date(2026, 11, 1)
    with pytest.raises(DateSpecError):
        resolve_date("soon", monday)


def test_todos_are_matched_by_task_keywords_with_duplicates_spurious_and_wrong_items_counted():
    expected = [ExpectedTodo(task="swim lesson", status="done"), ExpectedTodo(task="dentist")]
    stored = [
        {"task": "Book swim lessons", "status": "not started"},
        {"task": "Book swim lessons", "status": "done"},
        {"task": "Buy a boat", "status": "not started"},
    ]
    counts = score_todos(expected, stored, date(2026, 1, 1), "UTC")
    assert (counts.facts, counts.correct, counts.wrong, counts.duplicates, counts.spurious) == (2, 1, 0, 1, 1)
    wrong = score_todos([ExpectedTodo(task="swim", deadline="today+1")], [{"task": "swim", "deadline": "2026-01-03T10:00:00+00:00"}], date(2026, 1, 1), "UTC")
    assert (wrong.correct, wrong.wrong) == (0, 1)


def test_profile_values_are_facts_and_unexpected_values_are_spurious():
    counts = score_profile(
        {"name": "Dana", "location": "Oakland", "connections": ["Lena", "Tom"]},
        {"name": "Dana", "location": "San Francisco", "connections": ["sister Lena"], "job": "nurse", "interests": []},
    )
    assert (counts.facts, counts.correct, counts.wrong, counts.spurious) == (4, 2, 1, 1)


def test_instructions_must_contain_each_phrase_and_unasked_instructions_are_spurious():
    assert score_instructions(["local", ["price", "cost"]], "Include local shops and a cost.").correct == 2
    assert score_instructions([], "Always be brief.").spurious == 1


def test_a_reply_is_chinese_when_chinese_characters_are_most_of_its_letters():
    assert reply_language("你住在上海。") == "zh"
    assert reply_language("Okay, noted. 上海") == "en"

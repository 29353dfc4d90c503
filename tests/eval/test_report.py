"""`maistro eval compare` reads scorecards as hostile input: every value a file holds is written to the HTML page
as text (never as markup) and to the terminal as text (never as console markup), and a value of the wrong type
where the report computes with it refuses the file with one sentence, writing nothing."""

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from graph.app.cli import app
from graph.eval.report import html_report

runner = CliRunner()
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>[/bold][link=x]'
TEXT_FIELDS = ("label", "graph", "model", "base_url", "today", "timezone", "stopped")


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def scorecard(tmp_path_factory) -> dict[str, Any]:
    """A real scorecard: the oracle on a few cases, one of which fails a check (so problems are shown)."""
    path = tmp_path_factory.mktemp("card") / "oracle.json"
    result = runner.invoke(app, ["eval", "--player", "oracle", "--cases", "single-*", "--json", str(path)])
    assert result.exit_code == 0, result.output
    card = json.loads(path.read_text(encoding="utf-8"))
    card["cases"][0]["problems"] = ["a problem"]
    card["stopped"] = "stopped"
    return card


def leaves(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every value in a JSON document that is not a container."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path


def with_value(card: dict[str, Any], path: tuple, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(card)
    holder = changed
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    return changed


def compare(tmp_path: Path, card: dict[str, Any]) -> tuple[Any, Path]:
    (tmp_path / "hostile.json").write_text(json.dumps(card), encoding="utf-8")
    page = tmp_path / "page.html"
    page.unlink(missing_ok=True)
    return runner.invoke(app, ["eval", "compare", str(tmp_path / "hostile.json"), "--html", str(page)]), page


def test_a_hostile_value_in_any_field_is_shown_as_text_or_refuses_the_file(scorecard, tmp_path):
    paths = [path for path in leaves(scorecard) if path != ("format",)]
    assert len(paths) > 100
    shown = refused = 0
    for path in paths:
        result, page = compare(tmp_path, with_value(scorecard, path, HOSTILE))
        assert result.exit_code in (0, 1) and "Traceback" not in result.output, (path, result.output)
        if result.exit_code == 0:
            html = page.read_text(encoding="utf-8").lower()
            assert "<script" not in html and "<img" not in html, path
            shown += 1
        else:
            assert "is not a scorecard written by `maistro eval --json`: " in result.output, (path, result.output)
            assert result.output.count("\n") == 1, result.output
            assert not page.exists(), "nothing is written for a refused file"
            refused += 1
    assert shown and refused


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_every_text_the_page_shows_is_escaped(scorecard, tmp_path, field):
    result, page = compare(tmp_path, {**scorecard, field: HOSTILE})

    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<script" not in html.lower()
    assert HOSTILE in result.output or field in ("today", "timezone", "stopped", "base_url", "model"), (
        "names in the terminal tables are text, never console markup")


def test_a_hostile_category_case_id_and_problem_are_escaped(scorecard, tmp_path):
    card = copy.deepcopy(scorecard)
    card["categories"] = {HOSTILE: summary for summary in card["categories"].values()}
    card["cases"][0]["case_id"] = HOSTILE
    card["cases"][0]["problems"] = [HOSTILE]

    result, page = compare(tmp_path, card)

    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert html.count("&lt;script&gt;alert(1)") >= 4, "the chart's label, the table's row, the case and its problem"
    assert "<script" not in html.lower()
    assert HOSTILE in result.output


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (("overall", "cases"), "4", "overall.cases: Input should be a valid integer"),
        (("overall", "rates", "score"), "<b>1</b>", "overall.rates.score: Input should be a valid number"),
        (("seconds",), "0.3", "seconds: Input should be a valid number"),
        (("cases", 0, "problems"), "none", "cases.0.problems: Input should be a valid list"),
    ],
)
def test_a_value_of_the_wrong_type_refuses_the_file_in_one_sentence(scorecard, tmp_path, path, value, where):
    result, page = compare(tmp_path, with_value(scorecard, path, value))

    assert result.exit_code == 1 and not page.exists()
    assert result.output.strip() == (
        f"{tmp_path / 'hostile.json'} is not a scorecard written by `maistro eval --json`: {where}.")


def test_the_page_escapes_a_count_too_even_when_no_file_was_checked(scorecard):
    page = html_report([with_value(scorecard, ("overall", "cases"), "<script>alert(1)</script>")])

    assert "<script" not in page and page.count("&lt;script&gt;alert(1)&lt;/script&gt; cases") == 2

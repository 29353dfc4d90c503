"""The scorecard: built from scored runs, printed as tables, saved as JSON, drawn as a self-contained HTML page
(inline SVG charts, no scripts or remote files), and put side by side for several runs (`compare`)."""

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from graph.eval.scoring import CaseScore, by_category, summarise

FORMAT = "maistro-eval v1"
QUALITY = (
    ("score", "score"),
    ("memory_recall", "memory recall"),
    ("memory_precision", "memory precision"),
    ("recall_answers", "recall answers"),
    ("secrets_kept", "secrets kept"),
    ("language", "language"),
)
COLOURS = ("#2f6fdf", "#e0873a", "#3aa76d", "#b44cc2", "#c9423b", "#7a7a7a")


class ReportError(ValueError):
    """A file given to `compare` is not a scorecard saved by `maistro eval --json`."""


def scorecard(scores: Sequence[CaseScore], run: Mapping[str, Any]) -> dict[str, Any]:
    """The scorecard of a run: what ran (`run`: label, model, endpoint, graph, today, ...), overall, per
    category and per case."""
    return {
        "format": FORMAT,
        **run,
        "overall": summarise(scores),
        "categories": by_category(scores),
        "cases": [score.as_json() for score in scores],
    }


class _Checked(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class _Latency(_Checked):
    median: float | None
    p90: float | None


class _Counts(_Checked):
    model_calls: int
    prompt_tokens: int
    completion_tokens: int
    model_errors: int
    failed_updates: int
    pending: int = 0  # cards saved before pending changes were counted have none


class _Rates(_Checked):
    score: float | None
    memory_recall: float | None
    memory_precision: float | None
    recall_answers: float | None
    secrets_kept: float | None
    language: float | None
    answered_first: float | None


class _Summary(_Checked):
    cases: int
    counts: _Counts
    rates: _Rates
    turn_seconds: _Latency
    first_token_seconds: _Latency


class _Case(_Checked):
    case_id: str
    problems: list[str]


class _Scorecard(_Checked):
    """What the tables and the HTML page read of a scorecard: text where they show text, numbers where they
    compute with numbers."""

    label: str | None = None
    graph: str | None = None
    model: str | None = None
    base_url: str | None = None
    today: str | None = None
    timezone: str | None = None
    stopped: str | None = None
    seconds: float = 0
    overall: _Summary
    categories: dict[str, _Summary]
    cases: list[_Case]


def load_scorecard(path: Path) -> dict[str, Any]:
    """A scorecard saved with `--json`; `ReportError` with one sentence when the file is not one, or holds a
    value of another type where the report reads one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ReportError(f"{path} cannot be read as JSON: {error}.") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{path} is not a scorecard written by `maistro eval --json`.")
    try:
        _Scorecard.model_validate(data)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(map(str, problem["loc"]))
        raise ReportError(f"{path} is not a scorecard written by `maistro eval --json`: {where}: {problem['msg']}.") from None
    return data


def percent(value: float | None) -> str:
    """A rate as a percentage ("–" when nothing was checked)."""
    return "–" if value is None else f"{100 * value:.0f}%" if value in (0, 1) else f"{100 * value:.1f}%"


def seconds(value: float | None) -> str:
    """A latency in seconds ("–" when none was measured)."""
    return "–" if value is None else f"{value:.2f} s"


def _cost(summary: Mapping[str, Any]) -> list[str]:
    counts, rates = summary["counts"], summary["rates"]
    return [
        str(counts["model_calls"]),
        f"{counts['prompt_tokens']:,} / {counts['completion_tokens']:,}",
        seconds(summary["first_token_seconds"]["median"]),
        seconds(summary["turn_seconds"]["median"]),
        seconds(summary["turn_seconds"]["p90"]),
        percent(rates["answered_first"]),
        f"{counts['model_errors']} / {counts['failed_updates']} / {counts.get('pending', 0)}",  # none in an older card
    ]


COST_COLUMNS = (
    "model calls",
    "tokens in / out",
    "first token (median)",
    "turn (median)",
    "turn (p90)",
    "answered first",
    "model errors / failed updates / left pending",
)


def _rows(card: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [*card["categories"].items(), ("overall", card["overall"])]


def title(card: Mapping[str, Any]) -> str:
    """A scorecard's one-line title: label, graph, cases."""
    return f"{card.get('label', '?')} on the {card.get('graph', '?')} graph, {card['overall']['cases']} cases"


def print_scorecard(console: Console, card: Mapping[str, Any]) -> None:
    """The quality table and the cost table, per category and overall, then the run's failed checks."""
    quality = Table(title=Text(f"Memory quality: {title(card)}"), title_justify="left")
    quality.add_column("category")
    quality.add_column("cases", justify="right")
    for _, label in QUALITY:
        quality.add_column(label, justify="right")
    cost = Table(title="What it costs", title_justify="left")
    cost.add_column("category")
    for label in COST_COLUMNS:
        cost.add_column(label, justify="right")
    for name, summary in _rows(card):
        style = "bold" if name == "overall" else None
        quality.add_row(Text(name), str(summary["cases"]), *(percent(summary["rates"][key]) for key, _ in QUALITY), style=style)
        cost.add_row(Text(name), *_cost(summary), style=style)
    console.print(quality)
    console.print(cost)
    failed = [(case["case_id"], problem) for case in card["cases"] for problem in case["problems"]]
    if failed:
        console.print(f"{len(failed)} failed checks (first ones):", markup=False)
        for case_id, problem in failed[:12]:
            console.print(f"  {case_id}: {problem}", markup=False)
    if card.get("stopped"):
        console.print(f"The run stopped early: {card['stopped']}; cases not run are not scored.", markup=False)


def print_comparison(console: Console, cards: Sequence[Mapping[str, Any]]) -> None:
    """Score per category (and overall) of several scorecards side by side, then their costs (names as plain text,
    never as console markup)."""
    table = Table(title="Score by category", title_justify="left")
    table.add_column("category")
    for card in cards:
        table.add_column(Text(_name(card)), justify="right")
    for name in _categories(cards):
        table.add_row(Text(name), *(percent(_summary(card, name)["rates"]["score"]) if _summary(card, name) else "–" for card in cards),
                      style="bold" if name == "overall" else None)
    console.print(table)
    detail = Table(title="Overall", title_justify="left")
    detail.add_column("")
    for card in cards:
        detail.add_column(Text(_name(card)), justify="right")
    for key, label in QUALITY[1:]:
        detail.add_row(label, *(percent(card["overall"]["rates"][key]) for card in cards))
    for index, label in enumerate(COST_COLUMNS):
        detail.add_row(label, *(_cost(card["overall"])[index] for card in cards))
    console.print(detail)


def _categories(cards: Sequence[Mapping[str, Any]]) -> list[str]:
    return [*dict.fromkeys(name for card in cards for name in card["categories"]), "overall"]


def _summary(card: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return card["overall"] if name == "overall" else card["categories"].get(name)


def _bar_chart(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], caption: str) -> str:
    """A horizontal grouped bar chart (0–100%) as inline SVG: one group per row, one bar per series."""
    bar, gap, left, width = 14, 10, 170, 420
    height_per_group = bar * len(series) + gap
    height = 30 + height_per_group * len(groups) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" height="{height}" role="img" '
        f'aria-label="{_escaped(caption)}">'
    ]
    for tick in range(0, 101, 25):
        x = left + width * tick / 100
        parts.append(f'<line x1="{x}" y1="20" x2="{x}" y2="{height - 20}" stroke="#ddd"/>')
        parts.append(f'<text x="{x}" y="14" font-size="10" text-anchor="middle" fill="#666">{tick}%</text>')
    for row, group in enumerate(groups):
        top = 24 + row * height_per_group
        parts.append(
            f'<text x="{left - 8}" y="{top + bar * len(series) / 2 + 4}" font-size="12" text-anchor="end">{_escaped(group)}</text>'
        )
        for index, (name, values) in enumerate(series):
            value = values[row]
            y = top + index * bar
            colour = COLOURS[index % len(COLOURS)]
            if value is None:
                parts.append(f'<text x="{left + 4}" y="{y + bar - 3}" font-size="10" fill="#999">not checked</text>')
                continue
            parts.append(
                f'<rect x="{left}" y="{y}" width="{width * value:.1f}" height="{bar - 2}" fill="{colour}">'
                f"<title>{_escaped(name)}: {_escaped(percent(value))}</title></rect>"
            )
            parts.append(f'<text x="{left + width * value + 4:.1f}" y="{y + bar - 3}" font-size="10">{_escaped(percent(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _escaped(value: Any) -> str:
    """Any value as HTML text: every value the page shows goes through here."""
    return html.escape(str(value))


def _name(card: Mapping[str, Any]) -> str:
    return f"{card.get('label', '?')} ({card.get('graph', '?')})"


def _legend(cards: Sequence[Mapping[str, Any]]) -> str:
    items = "".join(
        f'<span class="key"><span class="swatch" style="background:{COLOURS[i % len(COLOURS)]}"></span>'
        f"{_escaped(_name(card))}</span>"
        for i, card in enumerate(cards)
    )
    return f'<p class="legend">{items}</p>'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    header = "".join(f"<th>{_escaped(cell)}</th>" for cell in head)
    body = "".join("<tr>" + "".join(f"<td>{_escaped(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


STYLE = """body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#222;max-width:1100px}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}td:first-child,th:first-child{text-align:left}
th{background:#f4f4f4}.legend .key{margin-right:1.2rem}.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
.meta{color:#555;font-size:.9rem}.problems td{text-align:left}"""


def html_report(cards: Sequence[Mapping[str, Any]]) -> str:
    """One self-contained HTML page for one scorecard or several side by side: charts and tables."""
    categories = _categories(cards)
    charts = _bar_chart(
        categories,
        [(_name(card), [(_summary(card, name) or {}).get("rates", {}).get("score") for name in categories]) for card in cards],
        "Score by category",
    )
    quality = _bar_chart(
        [label for _, label in QUALITY[1:]],
        [(_name(card), [card["overall"]["rates"][key] for key, _ in QUALITY[1:]]) for card in cards],
        "Overall quality",
    )
    meta = "".join(
        f"<li><b>{_escaped(_name(card))}</b>: model {_escaped(card.get('model') or '–')}, "
        f"{_escaped('at ' + card['base_url'] if card.get('base_url') else 'in process')}, "
        f"{_escaped(card['overall']['cases'])} cases, today {_escaped(card.get('today'))} ({_escaped(card.get('timezone'))}), "
        f"{_escaped(format(card.get('seconds', 0), '.0f'))} s"
        f"{_escaped(' — stopped early: ' + card['stopped'] if card.get('stopped') else '')}</li>"
        for card in cards
    )
    cost_rows = [[_name(card), *_cost(card["overall"])] for card in cards]
    sections = [
        f"<h1>maistro eval: {_escaped(' vs '.join(_name(card) for card in cards))}</h1>",
        f'<ul class="meta">{meta}</ul>',
        _legend(cards),
        "<h2>Score by category</h2>",
        charts,
        "<h2>Overall quality</h2>",
        quality,
        "<h2>What it costs</h2>",
        _table(["run", *COST_COLUMNS], cost_rows),
    ]
    for card in cards:
        rows = [
            [name, str(summary["cases"]), *(percent(summary["rates"][key]) for key, _ in QUALITY)]
            for name, summary in _rows(card)
        ]
        problems = [[case["case_id"], problem] for case in card["cases"] for problem in case["problems"]]
        sections += [
            f"<h2>{_escaped(title(card))}</h2>",
            _table(["category", "cases", *(label for _, label in QUALITY)], rows),
            f'<div class="problems">{_table(["case", "failed check"], problems) if problems else "<p>Every check passed.</p>"}</div>',
        ]
    body = "\n".join(sections)
    return f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>maistro eval</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n'

"""One `maistro eval` run: pick the model (endpoint or scripted player), check it, run the suite with a
progress bar, score it, print the scorecard and save the reports."""

import json
import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfoNotFoundError

from langchain_core.language_models import BaseChatModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from graph.backends.json_calls import JsonCallModel
from graph.eval.cases import Case
from graph.eval.endpoint import Endpoint, EndpointError, check_endpoint
from graph.eval.player import FLAWS, PLAYERS, Player, PlayerChatModel
from graph.eval.report import html_report, print_scorecard, scorecard
from graph.eval.runner import GRAPHS, Budget, run_suite, today_in
from graph.eval.scoring import score_case
from graph.settings import CALL_MODES, current_settings

NO_ENDPOINT = (
    "No model endpoint is configured: set OPENAI_BASE_URL (and MAISTRO_MODEL), or OPENAI_API_KEY for OpenAI, or pass "
    "--base-url and --model; `maistro eval --player oracle` runs the scripted oracle without one."
)


CALL_MODE_WORDS = {"tools": "tool calls", "json": "schema-constrained JSON (the model does not call tools)"}


class EvalSetupError(ValueError):
    """The run cannot start as asked (unknown player or graph, bad time zone, no or broken endpoint)."""


def choose_endpoint(model: str | None, base_url: str | None) -> Endpoint:
    """The endpoint to measure: the options, else the agent's settings (OPENAI_BASE_URL, OPENAI_API_KEY, MAISTRO_MODEL)."""
    settings = current_settings()
    base_url = base_url or settings.openai_base_url
    if not base_url and not settings.openai_api_key:
        raise EvalSetupError(NO_ENDPOINT)
    return Endpoint(model or settings.model, base_url, settings.openai_api_key or "", settings.model_timeout)


def run_eval(
    cases: Sequence[Case],
    *,
    model: str | None = None,
    base_url: str | None = None,
    player: str | None = None,
    graph: str = "maistro",
    concurrency: int = 1,
    time_budget: float | None = None,
    max_calls: int | None = None,
    json_path: Path | None = None,
    html_path: Path | None = None,
    label: str | None = None,
    timezone: str = "UTC",
    call_mode: str | None = None,
    console: Console | None = None,
) -> dict:
    """Run, score and report one eval; returns the scorecard. `EvalSetupError` (one sentence) before anything runs
    when the player, graph or time zone is unknown, a report cannot be written where asked, or the endpoint is
    missing, unreachable or cannot call tools under `call_mode` "tools" (default: MAISTRO_CALL_MODE)."""
    console = console or Console()
    if graph not in GRAPHS:
        raise EvalSetupError(f"Unknown graph {graph!r}: choose {' or '.join(GRAPHS)}.")
    if player is not None and player not in PLAYERS:
        raise EvalSetupError(f"Unknown player {player!r}: choose one of {', '.join(PLAYERS)}.")
    if call_mode is not None and call_mode not in CALL_MODES:
        raise EvalSetupError(f"Unknown call mode {call_mode!r}: choose {', '.join(CALL_MODES)}.")
    if player is not None and (model or base_url or call_mode):
        raise EvalSetupError(
            "--player plays the cases with a scripted model in process: drop --model, --base-url and --call-mode."
        )
    for path in (json_path, html_path):
        if path is not None and not (path.parent.is_dir() and os.access(path.parent, os.W_OK)):
            raise EvalSetupError(f"Cannot write {path}: its directory {path.parent} does not exist or is not writable.")
    try:
        today = today_in(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise EvalSetupError(f"--timezone {timezone!r} is not a known IANA time zone, such as Europe/Berlin.") from None
    if player is None and (faulted := [case.id for case in cases if case.plays_fault]):
        cases = [case for case in cases if not case.plays_fault]
        console.print(
            f"Left out {len(faulted)} case(s) that play an endpoint's fault, which only --player can play: {', '.join(faulted)}.",
            markup=False,
        )
        if not cases:
            raise EvalSetupError("Every case chosen plays an endpoint's fault, which only --player can play: choose others.")
    if player is None:
        endpoint = choose_endpoint(model, base_url)
        console.print(f"Checking {endpoint.model} at {endpoint.where} with one tiny tool call…", markup=False)
        try:
            mode = check_endpoint(endpoint, call_mode or current_settings().call_mode)
        except EndpointError as error:
            raise EvalSetupError(str(error)) from None
        if mode == "json" and graph == "tutorial":
            raise EvalSetupError(
                f"The tutorial's graph asks for its memory updates with tool calls (trustcall), which {endpoint.model!r} "
                "is not asked for under this call mode: measure it on --graph maistro, or with --call-mode tools."
            )
        console.print(f"Memory updates are asked as {CALL_MODE_WORDS[mode]}.", markup=False)
        client = endpoint.client() if mode == "tools" else JsonCallModel(inner=endpoint.client())

        def models(_case: Case) -> BaseChatModel:
            """Every case shares the endpoint's client."""
            return client

        run = {
            "label": label or endpoint.model,
            "model": endpoint.model,
            "base_url": endpoint.where,
            "player": None,
            "call_mode": mode,
        }
    else:
        flaw = None if player == "oracle" else player

        def models(case: Case) -> BaseChatModel:
            """Each case gets its own player, which reads the case's `play` data."""
            return PlayerChatModel(player=Player(case, today, flaw))

        description = "plays every case right" if flaw is None else FLAWS[flaw]
        run = {"label": label or player, "model": f"scripted {player} ({description})", "base_url": None, "player": player}
    started, started_at = time.monotonic(), datetime.now(UTC).isoformat(timespec="seconds")
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(f"eval on the {graph} graph", total=len(cases))

        def finished(_run, case: Case) -> None:
            progress.update(task, advance=1, description=f"eval on the {graph} graph: {case.id}")

        runs, stopped = run_suite(
            cases,
            graph,
            models,
            concurrency=concurrency,
            budget=Budget(time_budget, max_calls),
            timezone=timezone,
            on_case=finished,
        )
    scores = [score_case(case_run, today, timezone) for case_run in runs if case_run.stopped is None]
    card = scorecard(
        scores,
        {
            **run,
            "graph": graph,
            "today": today.isoformat(),
            "timezone": timezone,
            "started": started_at,
            "seconds": round(time.monotonic() - started, 2),
            "stopped": stopped,
            "cases_asked": len(cases),
        },
    )
    print_scorecard(console, card)
    if json_path:
        json_path.write_text(json.dumps(card, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        console.print(f"Scorecard: {json_path}", markup=False)
    if html_path:
        html_path.write_text(html_report([card]), encoding="utf-8")
        console.print(f"HTML report: {html_path}", markup=False)
    return card


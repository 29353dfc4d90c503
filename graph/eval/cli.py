"""`maistro eval` and `maistro eval compare`: the scorecard's command line (registered in graph/app/cli.py).

Everything heavy is imported when a command runs, so `maistro --help` stays quick.
"""

from pathlib import Path
from typing import Annotated, NoReturn

import typer

eval_app = typer.Typer(
    help="Score how well a model keeps memories through this agent (or the tutorial's graph).",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _fail(message: str) -> NoReturn:
    typer.echo(message, err=True)
    raise typer.Exit(1)


@eval_app.callback()
def run(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name (default: MAISTRO_MODEL).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint, with /v1 (default: OPENAI_BASE_URL).")
    ] = None,
    player: Annotated[
        str | None,
        typer.Option(help="Play the cases with a scripted model instead of an endpoint: oracle, or a flawed one (an unknown name lists them)."),
    ] = None,
    graph: Annotated[str, typer.Option(help="The graph to evaluate: maistro (this agent) or tutorial.")] = "maistro",
    cases: Annotated[
        str | None, typer.Option("--cases", "-k", help="Only cases whose id or category matches (globs, comma-separated).")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1, max=64, help="Cases run at once.")] = 1,
    time_budget: Annotated[
        float | None, typer.Option(min=1, help="Stop starting cases after this many seconds.")
    ] = None,
    max_calls: Annotated[int | None, typer.Option(min=1, help="Stop starting cases after this many model calls.")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Save the scorecard as JSON.")] = None,
    html_path: Annotated[Path | None, typer.Option("--html", help="Save a self-contained HTML report.")] = None,
    label: Annotated[str | None, typer.Option(help="The run's name in reports (default: the model or player).")] = None,
    timezone: Annotated[str, typer.Option(help="Time zone of the run's 'today' (IANA name).")] = "UTC",
    list_cases: Annotated[bool, typer.Option("--list", help="List the cases and exit.")] = False,
    call_mode: Annotated[
        str | None,
        typer.Option(
            "--call-mode",
            help="How memory updates are asked: tools, json (schema-constrained JSON), or auto (JSON when the model "
            "answers the up-front tool call without calling). Default: MAISTRO_CALL_MODE, else auto.",
        ),
    ] = None,
) -> None:
    """Run the eval suite through the real graph and print the scorecard; see `maistro eval compare` for several."""
    if ctx.invoked_subcommand:
        return
    from graph.eval.cases import CaseError, load_cases

    try:
        chosen = load_cases(cases)
    except CaseError as error:
        _fail(str(error))
    if list_cases:
        for case in chosen:
            typer.echo(f"{case.id}\t{case.category}\t{case.description}")
        return
    from graph.eval.session import EvalSetupError, run_eval

    try:
        run_eval(
            chosen,
            model=model,
            base_url=base_url,
            player=player,
            graph=graph,
            concurrency=concurrency,
            time_budget=time_budget,
            max_calls=max_calls,
            json_path=json_path,
            html_path=html_path,
            label=label,
            timezone=timezone,
            call_mode=call_mode,
        )
    except EvalSetupError as error:
        _fail(str(error))


@eval_app.command()
def compare(
    files: Annotated[list[Path], typer.Argument(help="Scorecards saved with `maistro eval --json`.")],
    html_path: Annotated[Path | None, typer.Option("--html", help="Save the comparison as an HTML report.")] = None,
) -> None:
    """Put the scorecards of several runs (models, graphs) side by side."""
    from rich.console import Console

    from graph.eval.report import ReportError, html_report, load_scorecard, print_comparison

    try:
        cards = [load_scorecard(path) for path in files]
    except ReportError as error:
        _fail(str(error))
    print_comparison(Console(), cards)
    if html_path:
        html_path.write_text(html_report(cards), encoding="utf-8")
        typer.echo(f"HTML report: {html_path}")

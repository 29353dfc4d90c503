"""Runs of the eval suite with scripted players, in process, for the eval's tests."""

from collections.abc import Sequence
from datetime import date

from graph.eval.cases import Case
from graph.eval.player import Player, PlayerChatModel
from graph.eval.runner import run_suite, today_in
from graph.eval.scoring import CaseScore, Counts, score_case

TODAY: date = today_in("UTC")


def play(cases: Sequence[Case], graph: str = "maistro", flaw: str | None = None) -> list[CaseScore]:
    """Every case played by the oracle (`flaw` None) or a flawed player on `graph`, scored."""
    runs, stopped = run_suite(
        cases, graph, lambda case: PlayerChatModel(player=Player(case, TODAY, flaw)), concurrency=2
    )
    assert stopped is None
    return [score_case(run, TODAY) for run in runs]


def total(scores: Sequence[CaseScore]) -> Counts:
    """The scores' counts added up."""
    return sum((score.counts for score in scores), Counts())

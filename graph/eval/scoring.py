"""Scores a case run against its case: memory facts and items, recall answers, secrets, reply language, costs.

Every check is counted, so scores add up across cases and categories:
- memory: each expected profile value (a list field's each item), ToDo and instructions phrase is a fact;
  `correct` facts were stored right; `wrong` ones were stored with another value (a ToDo with the wrong status,
  deadline or time); `spurious` are stored ToDos no expected one matches and stored profile values the case did
  not expect; `duplicates` are further stored ToDos matching an expected one already matched. A case that expects
  no memory has one fact: that nothing was stored.
  recall = correct ÷ facts, precision = correct ÷ (correct + wrong + spurious + duplicates).
- recall answers: each fact a reply must mention; secrets: each string that must not be stored, kept out;
  language: each reply that must be in a language, and is; confirmations: each thing a turn's memory notes must
  say (what a change replaced: "location Boston → Denver"), said; pending kept: each memory whose failed update
  must be kept as a pending change, kept. `pending` counts every update a run left pending, expected or not;
  reminders: each reminder a turn must ask for (`Remind`'s cron line) and each fact its message must say, asked.
- score = checks passed ÷ (checks + wrong + spurious + duplicates): 1.0 only when everything is right and
  nothing unwanted was stored.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import date, datetime
from statistics import median
from typing import Any, get_origin
from zoneinfo import ZoneInfo

from graph.eval.cases import CATEGORIES, Alternatives, Case, ExpectedReminder, ExpectedTodo
from graph.eval.dates import cron_dates, resolve_date
from graph.eval.runner import CaseRun
from schemas import Profile

# Profile fields holding lists: each expected item is a fact of its own.
LIST_FIELDS = tuple(name for name, info in Profile.model_fields.items() if get_origin(info.annotation) is list)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


@dataclass
class Counts:
    """The checks of one case or of many, added up."""

    facts: int = 0
    correct: int = 0
    wrong: int = 0
    spurious: int = 0
    duplicates: int = 0
    mentions: int = 0
    mentioned: int = 0
    secrets: int = 0
    secrets_kept: int = 0
    languages: int = 0
    right_language: int = 0
    turns: int = 0
    memory_turns: int = 0
    answered_first: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_errors: int = 0
    failed_updates: int = 0
    confirmations: int = 0
    confirmed: int = 0
    pending_expected: int = 0
    pending_kept: int = 0
    pending: int = 0
    reminders: int = 0
    reminders_asked: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def rates(counts: Counts) -> dict[str, float | None]:
    """The scorecard's ratios of some counts (None where nothing was checked)."""
    unwanted = counts.wrong + counts.spurious + counts.duplicates
    passed = (
        counts.correct + counts.mentioned + counts.secrets_kept + counts.right_language + counts.confirmed
        + counts.pending_kept + counts.reminders_asked
    )
    checks = (
        counts.facts + counts.mentions + counts.secrets + counts.languages + counts.confirmations
        + counts.pending_expected + counts.reminders
    )
    return {
        "score": _ratio(passed, checks + unwanted),
        "memory_recall": _ratio(counts.correct, counts.facts),
        "memory_precision": _ratio(counts.correct, counts.correct + unwanted),
        "recall_answers": _ratio(counts.mentioned, counts.mentions),
        "secrets_kept": _ratio(counts.secrets_kept, counts.secrets),
        "language": _ratio(counts.right_language, counts.languages),
        "confirmations": _ratio(counts.confirmed, counts.confirmations),
        "pending_kept": _ratio(counts.pending_kept, counts.pending_expected),
        "reminders": _ratio(counts.reminders_asked, counts.reminders),
        "answered_first": _ratio(counts.answered_first, counts.memory_turns),
        "calls_per_turn": _ratio(counts.model_calls, counts.turns),
    }


def _has(text: str, fact: Alternatives) -> bool:
    options = [fact] if isinstance(fact, str) else fact
    return any(option.casefold() in text.casefold() for option in options)


def reply_language(text: str) -> str:
    """'zh' when Chinese characters make up most of the reply's letters, else 'en'."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return "zh" if cjk and cjk >= latin else "en"


def _task_matches(expected: ExpectedTodo, stored: Mapping[str, Any]) -> bool:
    task = str(stored.get("task", ""))
    return all(word.casefold() in task.casefold() for word in expected.task.split())


def _stored_date(value: Any, timezone: str) -> date | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment.astimezone(ZoneInfo(timezone)).date() if moment.tzinfo else moment.date()


def _todo_right(expected: ExpectedTodo, stored: Mapping[str, Any], today: date, timezone: str) -> bool:
    if expected.status is not None and stored.get("status") != expected.status:
        return False
    if expected.time_to_complete is not None and stored.get("time_to_complete") != expected.time_to_complete:
        return False
    if expected.deadline is not None and _stored_date(stored.get("deadline"), timezone) != resolve_date(expected.deadline, today):
        return False
    solutions = " ".join(map(str, stored.get("solutions") or []))
    return all(_has(solutions, fact) for fact in expected.solutions_contain)


def score_todos(expected: Sequence[ExpectedTodo], stored: Sequence[Mapping[str, Any]], today: date, timezone: str) -> Counts:
    """Match stored ToDos to expected ones by task keywords: the best match (a right one first) counts, further
    matches are duplicates, stored ToDos matching none are spurious."""
    counts = Counts(facts=len(expected))
    unclaimed = list(stored)
    for item in expected:
        matches = [todo for todo in unclaimed if _task_matches(item, todo)]
        if not matches:
            continue
        right = [todo for todo in matches if _todo_right(item, todo, today, timezone)]
        counts.correct += bool(right)
        counts.wrong += not right
        counts.duplicates += len(matches) - 1
        unclaimed = [todo for todo in unclaimed if not any(todo is match for match in matches)]
    counts.spurious += len(unclaimed)
    return counts


def _values(value: Any) -> list[str]:
    if value in (None, "", []):
        return []
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]


def score_profile(expected: Mapping[str, Any], stored: Mapping[str, Any] | None) -> Counts:
    """Each expected value is a fact (each item of a list field such as `connections`); a stored value in place of
    a missing expected one is wrong, any other stored value the case did not expect is spurious."""
    counts = Counts()
    stored = stored or {}
    for name in dict.fromkeys([*expected, *stored]):
        wanted = expected.get(name)
        facts = [] if wanted is None else list(wanted) if name in LIST_FIELDS else [wanted]
        have = _values(stored.get(name))
        found = [fact for fact in facts if any(_has(item, fact) for item in have)]
        unmatched = [item for item in have if not any(_has(item, fact) for fact in facts)]
        replaced = min(len(unmatched), len(facts) - len(found))
        counts.facts += len(facts)
        counts.correct += len(found)
        counts.wrong += replaced
        counts.spurious += len(unmatched) - replaced
    return counts


def score_instructions(expected: Sequence[Alternatives], stored: str) -> Counts:
    """Each phrase the instructions must contain is a fact; instructions stored when none were expected are spurious."""
    found = sum(_has(stored, fact) for fact in expected)
    return Counts(facts=len(expected), correct=found, spurious=int(not expected and bool(stored.strip())))


@dataclass
class CaseScore:
    """One case's counts, the latencies of its turns, and the checks that failed (for the report)."""

    case_id: str
    category: str
    counts: Counts
    turn_seconds: list[float] = field(default_factory=list)
    first_token_seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The case's scores as JSON (counts, rates, latencies, problems)."""
        return {**asdict(self), "rates": rates(self.counts)}


def score_case(run: CaseRun, today: date, timezone: str = "UTC") -> CaseScore:
    """Score one case run: its dates counted from the user's today in the user's zone when the case sets the user's
    time, and each thing a reply must not name (`not_mention`) a check like one it must."""
    case: Case = run.case
    memory = run.memory
    today, timezone = case.user_today(today, timezone)
    counts = (
        score_profile(case.expect.profile, memory.get("profile"))
        + score_todos(case.expect.todos, memory.get("todos") or [], today, timezone)
        + score_instructions(case.expect.instructions, memory.get("instructions") or "")
    )
    if not (case.expect.profile or case.expect.todos or case.expect.instructions):
        counts.facts += 1  # a case that expects no memory checks that none was stored
        counts.correct += not (counts.wrong or counts.spurious or counts.duplicates)
    score = CaseScore(case.id, case.category, counts)
    for secret in case.must_not_store:
        counts.secrets += 1
        kept = secret.casefold() not in run.stored_text.casefold()
        counts.secrets_kept += kept
        if not kept:
            score.problems.append(f"stored the secret {secret!r}")
    for turn, record in zip(case.turns, run.turns):
        counts.mentions += len(turn.mention)
        missing = [fact for fact in turn.mention if not _has(record.reply, fact)]
        counts.mentioned += len(turn.mention) - len(missing)
        score.problems += [f"the reply to {turn.user!r} does not mention {fact!r}" for fact in missing]
        counts.mentions += len(turn.not_mention)
        named = [fact for fact in turn.not_mention if _has(record.reply, fact)]
        counts.mentioned += len(turn.not_mention) - len(named)
        score.problems += [f"the reply to {turn.user!r} names {fact!r}, which it must not name" for fact in named]
        if turn.language:
            counts.languages += 1
            right = reply_language(record.reply) == turn.language
            counts.right_language += right
            if not right:
                score.problems.append(f"the reply to {turn.user!r} is not in {turn.language!r}")
        counts.confirmations += len(turn.confirm)
        notes = "\n".join(record.notes)
        unsaid = [fact for fact in turn.confirm if not _has(notes, fact)]
        counts.confirmed += len(turn.confirm) - len(unsaid)
        score.problems += [f"the notes on {turn.user!r} do not say {fact!r}" for fact in unsaid]
        if turn.reminder:
            score_reminder(turn.reminder, record.reminders, counts, score.problems, turn.user, today)
        counts.turns += 1
        counts.memory_turns += record.memory_turn
        counts.answered_first += record.answered_first
        counts.model_calls += record.model_calls
        counts.prompt_tokens += record.prompt_tokens
        counts.completion_tokens += record.completion_tokens
        counts.model_errors += record.error is not None
        counts.failed_updates += record.failed_updates
        score.turn_seconds.append(record.seconds)
        if record.first_token_seconds is not None:
            score.first_token_seconds.append(record.first_token_seconds)
        if record.error:
            score.problems.append(f"the turn {turn.user!r} failed: {record.error}")
    counts.pending = len(run.pending)
    left = list(run.pending)
    for kind in case.expect.pending:
        counts.pending_expected += 1
        if kind in left:
            left.remove(kind)
            counts.pending_kept += 1
        else:
            score.problems.append(f"the failed {kind} update was not kept as a pending change")
    for label, number in (("wrong", counts.wrong), ("spurious", counts.spurious), ("duplicate", counts.duplicates)):
        if number:
            score.problems.append(f"{number} {label} stored value(s)")
    if counts.correct < counts.facts:
        score.problems.append(f"{counts.facts - counts.correct} of {counts.facts} expected memories missing or wrong")
    return score


def score_reminder(
    expected: ExpectedReminder, asked: Sequence[Mapping[str, Any]], counts: Counts, problems: list[str], said: str, today: date
) -> None:
    """Count a turn's expected reminder: one check for a `Remind` request with its cron line (its dates counted from
    the user's `today`), and an empty message when it expects a digest; one per fact its message must contain."""
    schedule = " ".join(cron_dates(expected.schedule, today).split())
    matching = [request for request in asked if " ".join(str(request.get("schedule", "")).split()) == schedule]
    message = str(matching[0].get("message") or "") if matching else ""
    counts.reminders += 1 + len(expected.about)
    scheduled = bool(matching) and (bool(expected.about) or not message.strip())
    counts.reminders_asked += scheduled
    if not scheduled:
        problems.append(f"the turn {said!r} asked for no reminder {schedule!r}" + ("" if expected.about else " with no message"))
    missing = [fact for fact in expected.about if not (matching and _has(message, fact))]
    counts.reminders_asked += len(expected.about) - len(missing)
    problems += [f"the reminder asked on {said!r} does not say {fact!r}" for fact in missing]


def _latency(values: Iterable[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    if not ordered:
        return {"median": None, "p90": None}
    return {"median": median(ordered), "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]}


def summarise(scores: Sequence[CaseScore]) -> dict[str, Any]:
    """Counts, rates and latencies of a group of case scores."""
    total = sum((score.counts for score in scores), Counts())
    return {
        "cases": len(scores),
        "counts": asdict(total),
        "rates": rates(total),
        "turn_seconds": _latency(s for score in scores for s in score.turn_seconds),
        "first_token_seconds": _latency(s for score in scores for s in score.first_token_seconds),
    }


def by_category(scores: Sequence[CaseScore]) -> dict[str, dict[str, Any]]:
    """`summarise` for each category, in the suite's order of categories."""
    categories = sorted({score.category for score in scores}, key=CATEGORIES.index)
    return {category: summarise([s for s in scores if s.category == category]) for category in categories}

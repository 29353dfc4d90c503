"""Relative dates the user wrote, in English and Chinese, resolved against their own today; and a model's deadline
checked against them.

A model asked to turn "tomorrow" into a date counts from whatever clock it trusts: mem0's most reported date bug
was counting from the wrong one (mem0#4963). The expressions read here are "today", "tonight", "tomorrow", "the
day after tomorrow", "in N days", "N days / a week from today", "in N weeks", "next <weekday>" (the first one after today, as `graph.eval.dates` reads it),
and 今天, 今晚, 明天, 后天, 大后天, "N天后" and "N周后" (digits or 一…十), 下周X / 下星期X / 下礼拜X (that weekday of next week,
weeks starting on Monday). A message naming exactly one of them (not "next <weekday>", which English speakers
read two ways) and no other date (a weekday or month name, a written date) pins the deadline of the one ToDo its turn dates: `pinned_deadlines` moves that deadline to the
named day, keeping the model's time of day, in the user's zone.
"""

import calendar
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import date, datetime, time, timedelta

from graph.memory.changes import MemoryChange
from graph.memory.deadlines import zoned_deadline
from graph.memory.due import deadline_at
from graph.memory.kinds import MemoryKind

WEEKDAYS = tuple(day.lower() for day in calendar.day_name)
CHINESE_WEEKDAYS = "一二三四五六日"
CHINESE_NUMBERS = {character: number for number, character in enumerate("一二三四五六七八九十", 1)} | {"两": 2}
ENGLISH_NUMBERS = {word: number for number, word in enumerate(("one", "two", "three", "four", "five", "six", "seven"), 1)}
ENGLISH_NUMBERS["a"] = 1

_EXPRESSION = re.compile(
    r"\b(?P<weeks>a|one|two|three|\d+) weeks? from (?:today|now)\b|\bin (?P<in_weeks>a|one|two|three|\d+) weeks?\b"
    r"|\b(?P<from_days>\d+|" + "|".join(ENGLISH_NUMBERS) + r") days? from (?:today|now)\b"
    r"|(?P<zh_weeks>\d+|[一二两三四五六七八九十])(?:个)?(?:周|星期|礼拜)(?:之)?后"
    r"|\b(?P<today>today|tonight)\b|\b(?P<after>(?:the )?day after tomorrow)\b|\b(?P<tomorrow>tomorrow)\b"
    r"|\bin (?P<days>\d+|" + "|".join(ENGLISH_NUMBERS) + r") days?\b"
    r"|\bnext (?P<weekday>" + "|".join(WEEKDAYS) + r")\b"
    r"|(?P<zh_3>大后天)|(?P<zh_2>后天)|(?P<zh_1>明天|明早|明晚)|(?P<zh_0>今天|今晚)"
    r"|(?P<zh_days>\d+|[一二两三四五六七八九十])天(?:之)?后"
    r"|(?<!下)下(?:周|星期|礼拜)(?P<zh_weekday>[一二三四五六日天])",
    re.IGNORECASE,
)
# Words that name a date another way: with one of them, the message's date is not only the relative one.
_OTHER_DATE = re.compile(
    r"\b(?:" + "|".join((*WEEKDAYS, *(m.lower() for m in calendar.month_name[1:]))) + r")\b"
    r"|\d{1,4}[-/.]\d{1,2}|\b\d{1,2}(?:st|nd|rd|th)\b|\d+\s*[月号日]|[十二三]?[一二三四五六七八九十]\s*[号]"
    r"|周[一二三四五六日天]|星期[一二三四五六日天]",
    re.IGNORECASE,
)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else CHINESE_NUMBERS.get(text) or ENGLISH_NUMBERS[text.lower()]


def _resolved(match: re.Match[str], today: date) -> date:
    """The day one matched expression names, counted from `today`."""
    found = {name: value for name, value in match.groupdict().items() if value}
    name, value = next(iter(found.items()))
    if name.startswith("zh_") and name[3:].isdigit():
        return today + timedelta(days=int(name[3:]))
    if name in ("days", "zh_days", "from_days"):
        return today + timedelta(days=_number(value))
    if name in ("weeks", "in_weeks", "zh_weeks"):
        return today + timedelta(weeks=_number(value))
    if name == "weekday":
        return today + timedelta(days=(WEEKDAYS.index(value.lower()) - today.weekday() - 1) % 7 + 1)
    if name == "zh_weekday":
        next_monday = today + timedelta(days=7 - today.weekday())
        return next_monday + timedelta(days=CHINESE_WEEKDAYS.index("日" if value == "天" else value))
    return today + timedelta(days={"today": 0, "tomorrow": 1, "after": 2}[name])


def said_dates(text: str, today: date) -> list[date]:
    """The days the relative expressions in `text` name, counted from the user's `today`, in the order written (each
    day once)."""
    return list(dict.fromkeys(_resolved(match, today) for match in _EXPRESSION.finditer(text)))


def only_date_said(text: str, today: date) -> date | None:
    """The one day `text` names, when it names exactly one relative day and no date written another way (the
    expressions themselves aside); else None. "next <weekday>" names no single day here: English speakers differ
    on whether "next Friday" on a Thursday is the next day or a week later."""
    matches = list(_EXPRESSION.finditer(text))
    days = said_dates(text, today)
    if len(days) != 1 or any(match["weekday"] for match in matches) or _OTHER_DATE.search(_EXPRESSION.sub(" ", text)):
        return None
    return days[0]


def pinned_deadlines(kind: MemoryKind, changes: Sequence[MemoryChange], said: str, now: datetime) -> list[MemoryChange]:
    """`changes` with the deadline of the one document they date moved to the day the user's message `said`
    names (`only_date_said`, counted from `now`, the message's time in the user's zone), at the model's time of
    day there; unchanged when the message names no single day, or the changes date more than one document."""
    day = only_date_said(said, now.date()) if kind.deadline_field else None
    field = kind.deadline_field
    dated = [
        index
        for index, change in enumerate(changes)
        if change.after is not None and change.after.get(field)
        and change.after.get(field) != (change.before or {}).get(field)
    ]
    if day is None or len(dated) != 1:
        return list(changes)
    change = changes[dated[0]]
    deadline = deadline_at(zoned_deadline(change.after[field], now.tzinfo))
    if deadline is None or deadline.astimezone(now.tzinfo).date() == day:
        return list(changes)
    local = deadline.astimezone(now.tzinfo)
    moved = datetime.combine(day, time(local.hour, local.minute, local.second), now.tzinfo).isoformat()
    pinned = list(changes)
    pinned[dated[0]] = replace(change, after={**change.after, field: moved})
    return pinned

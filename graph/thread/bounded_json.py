"""Model output read as JSON within a size and a depth bound, in linear time, never raising.

A model's text can be anything: `"[" * 1000` makes `json.loads` raise RecursionError, and json-repair takes a
second on 16,000 `{` (its time grows with the square of the input). So model text is read here only after one
linear pass over its brackets (`spans`, a loop without recursion) has checked it against MAX_JSON_CHARS and
MAX_JSON_DEPTH: `json` then never nests deeper than MAX_JSON_DEPTH, json-repair is given only text with at most
MAX_JSON_DEPTH brackets in all (so it cannot nest deeper either, however it reads quotes), and what they raise
is caught here and returned as the problem (`read_json`). `value_depth` measures an already parsed value the same
way, for calls a client library parsed (a checkpoint cannot store arguments nested 500 deep).
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import json_repair

# The most characters of model text read as one JSON value (a call written as text, or a call's arguments):
# a call of UpdateMemory takes under 100.
MAX_JSON_CHARS = 4_096
# The deepest nesting of brackets read: a call written as text nests 2 deep (3 in Mistral's list).
MAX_JSON_DEPTH = 16

TOO_LONG = f"it is longer than {MAX_JSON_CHARS:,} characters"
TOO_DEEP = f"it nests deeper than {MAX_JSON_DEPTH} levels"
NOT_JSON = "it is not valid JSON"

# What the bracket scan stops at: an escape (two characters), a quote, a bracket.
_STRUCTURE = re.compile(r'\\.|["{}\[\]]', re.DOTALL)


@dataclass(frozen=True)
class Span:
    """A bracketed value found in text: where it starts, where it ends (None: still open at the end of the text)
    and how deep its brackets nest."""

    start: int
    end: int | None
    depth: int


def spans(text: str) -> Iterator[Span]:
    """The outermost bracketed values of `text`, in order, in one pass without recursion.

    Inside brackets, strings are read as JSON reads them (with escapes), so a bracket in a string does not count;
    outside brackets quotes are prose (apostrophes, quoted words) and are not read as strings.
    """
    depth = deepest = start = 0
    in_string = False
    for token in _STRUCTURE.finditer(text):
        char = token.group()
        if in_string:
            in_string = char != '"'  # an escape is one token of two characters, so `\"` never ends a string
        elif char in "{[":
            if depth == 0:
                start, deepest = token.start(), 0
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            if depth:
                depth -= 1
                if depth == 0:
                    yield Span(start, token.end(), deepest)
        elif char == '"' and depth:
            in_string = True
    if depth:
        yield Span(start, None, deepest)


@dataclass(frozen=True)
class Reading:
    """What `read_json` made of a text: its value, or (`problem` set) why it has none, in words for a sentence."""

    value: Any = None
    problem: str = ""


def read_json(text: str, *, mend: bool) -> Reading:
    """The one JSON value `text` holds (whitespace around it allowed), read within MAX_JSON_CHARS and MAX_JSON_DEPTH;
    with `mend`, broken JSON of at most MAX_JSON_DEPTH brackets (a trailing comma, single quotes, cut short) is
    mended by json-repair. Never raises: a text it cannot read gets a `problem`."""
    if len(text) > MAX_JSON_CHARS:
        return Reading(problem=TOO_LONG)
    found = list(spans(text))
    if any(span.depth > MAX_JSON_DEPTH for span in found):
        return Reading(problem=TOO_DEEP)
    try:
        return Reading(json.loads(text))
    except ValueError:
        pass
    if not mend or not _one_bracketed_value(text, found) or text.count("{") + text.count("[") > MAX_JSON_DEPTH:
        return Reading(problem=NOT_JSON)
    try:
        value = json_repair.loads(text)
    except Exception:  # json-repair gives up on some input; nothing it raises leaves here
        return Reading(problem=NOT_JSON)
    return Reading(value) if isinstance(value, dict | list) else Reading(problem=NOT_JSON)


def _one_bracketed_value(text: str, found: list[Span]) -> bool:
    """Whether `text` is one bracketed value and whitespace (json-repair would drop the prose after a value)."""
    if len(found) != 1 or found[0].start != len(text) - len(text.lstrip()):
        return False
    return found[0].end is None or not text[found[0].end :].strip()


def value_depth(value: object) -> int:
    """How deep the dicts and lists of a parsed value nest (`{}` is 1), walked without recursion; the walk stops
    past MAX_JSON_DEPTH."""
    deepest, pending = 0, [(value, 1)]
    while pending and deepest <= MAX_JSON_DEPTH:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest

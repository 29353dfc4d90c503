"""Tool calls a model wrote as text instead of in `tool_calls`, as small local models do: only where a format puts them.

A call written as text is a model *format*, not a pattern to find anywhere. A reply is a call only when the whole
reply is one, in a format registered by name in `TEXT_CALL_FORMATS` (the way vLLM's tool parsers are chosen with
`--tool-call-parser`); each format names what its replies start with, and its parser reads the whole reply:

- `hermes` (Hermes, Qwen 2.5 and 3 chat templates): `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks
  and nothing else but whitespace; the last block may be left open (it runs to the end of the reply, as vLLM's
  hermes parser reads it). Text before the first block or after the last one makes the reply text;
- `mistral`: `[TOOL_CALLS]` and then one JSON list of calls (or one call), nothing after it;
- `json` (Llama 3.1's JSON tool format, as Ollama reads it): one JSON object with a "name" and its "parameters"
  or "arguments", nothing around it.

Everything else is text and stays whole: a call quoted in prose, in a fenced block, in inline code, OpenAI's
`{"type": "function", "function": …}` shape or a JSON list. None of these formats' chat templates puts calls in
a fence (llama.cpp's Hermes parser and vLLM's xLAM parser take fenced JSON anywhere in the text as a fallback,
which is how a quoted example gets run); a fence is how a model quotes. `quoted_calls` finds such quoted calls only so that the user can be told
they were not run. All model text is read within the bounds of `graph.thread.bounded_json`.
"""

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from graph.thread.bounded_json import MAX_JSON_CHARS, TOO_LONG, read_json, spans

logger = logging.getLogger(__name__)

# The keys a written call gives its arguments under: Hermes' and Ollama's "arguments", Llama 3.1's "parameters".
ARGUMENT_KEYS = ("arguments", "parameters")
NOT_A_CALL = "it names no tool"
NOT_AN_OBJECT = "its arguments are not a JSON object"


@dataclass(frozen=True)
class TextCall:
    """A call written as text: the tool's name and its arguments, or (`args` None) why they could not be read."""

    name: object
    args: dict[str, Any] | None
    problem: str = ""


# A format's parser: the whole reply (stripped, starting with the format's start) → its calls, or None when the
# reply is not in this format after all (then it is text).
TextCallParser = Callable[[str], list[TextCall] | None]


@dataclass(frozen=True)
class TextCallFormat:
    """A way models write calls as text: what a reply in it starts with, and its parser."""

    start: str
    parse: TextCallParser


TEXT_CALL_FORMATS: dict[str, TextCallFormat] = {}


def text_call_format(name: str, start: str) -> Callable[[TextCallParser], TextCallParser]:
    """Register the parser of a call format under `name`, for replies that start with `start` (a later
    registration of the name replaces it)."""

    def register(parser: TextCallParser) -> TextCallParser:
        TEXT_CALL_FORMATS[name] = TextCallFormat(start, parser)
        return parser

    return register


def written_calls(reply: str) -> list[TextCall] | None:
    """The calls `reply` is written as, when the whole reply is a call in a registered format; None when it is text.

    A format whose parser raises reads as text (logged): nothing a parser raises leaves here.
    """
    text = reply.strip()
    for name, call_format in TEXT_CALL_FORMATS.items():
        if not text.startswith(call_format.start):
            continue
        try:
            calls = call_format.parse(text)
        except Exception:  # a parser's own fault: the reply stays text
            logger.exception("The %s text-call parser failed; the reply is kept as text", name)
            continue
        if calls is not None:
            return calls
    return None


_LEADING_SPACE = re.compile(r"\s*")


def speakable_prefix(text: str) -> str:
    """The part of a reply still streaming that can be shown now: none of it while it may still become a call
    written as text (it starts with a format's start, or with the beginning of one), else all of it, without the
    whitespace that ends it (shown once more text follows)."""
    head = _LEADING_SPACE.match(text).end()
    for call_format in TEXT_CALL_FORMATS.values():
        begun = text[head : head + len(call_format.start)]
        if call_format.start.startswith(begun):
            return ""
    return text.rstrip()


def call_in(value: object, *, needs_arguments: bool = False) -> TextCall | None:
    """The call a decoded JSON object describes (a "name", and its arguments as an object or a JSON string of one),
    or None when it names no tool (or, with `needs_arguments`, gives no arguments)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    key = next((key for key in ARGUMENT_KEYS if key in value), None)
    if key is None:
        return None if needs_arguments else TextCall(value["name"], {})
    args = value[key]
    if isinstance(args, str):
        reading = read_json(args, mend=True)
        if reading.problem:
            return TextCall(value["name"], None, reading.problem)
        args = reading.value
    return TextCall(value["name"], args) if isinstance(args, dict) else TextCall(value["name"], None, NOT_AN_OBJECT)


def _call_body(body: str) -> TextCall:
    """The one call a format's markers hold, or why it cannot be read."""
    reading = read_json(body, mend=True)
    if reading.problem:
        return TextCall(None, None, reading.problem)
    return call_in(reading.value) or TextCall(None, None, NOT_A_CALL)


def _not_one_value(text: str) -> bool:
    """Whether `text` holds prose rather than one bracketed value (what follows a format's marker when the model
    writes about the marker instead of a call)."""
    first = next(spans(text), None)
    if first is None or text[: first.start].strip():
        return True
    return first.end is not None and bool(text[first.end :].strip())


HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"


@text_call_format("hermes", start=HERMES_OPEN)
def hermes_calls(text: str) -> list[TextCall] | None:
    """`<tool_call>{"name": …, "arguments": …}</tool_call>` blocks and whitespace, the last one maybe left open."""
    if len(text) > MAX_JSON_CHARS:
        return [TextCall(None, None, TOO_LONG)]
    calls, position = [], 0
    while position < len(text):
        if not text.startswith(HERMES_OPEN, position):
            return None  # text after the calls: the reply explains, it is not a call
        body_start = position + len(HERMES_OPEN)
        close = text.find(HERMES_CLOSE, body_start)
        if close < 0 and _not_one_value(text[body_start:]):
            return None  # an open tag followed by prose: the reply explains
        calls.append(_call_body(text[body_start : len(text) if close < 0 else close]))
        position = len(text) if close < 0 else _LEADING_SPACE.match(text, close + len(HERMES_CLOSE)).end()
    return calls


MISTRAL_START = "[TOOL_CALLS]"


@text_call_format("mistral", start=MISTRAL_START)
def mistral_calls(text: str) -> list[TextCall] | None:
    """`[TOOL_CALLS] [{"name": …, "arguments": …}, …]` (Mistral's format, when the server leaves it in the text)."""
    if len(text) > MAX_JSON_CHARS:
        return [TextCall(None, None, TOO_LONG)]
    calls = text.removeprefix(MISTRAL_START)
    if _not_one_value(calls):
        return None
    reading = read_json(calls, mend=True)
    if reading.problem:
        return [TextCall(None, None, reading.problem)]
    items = reading.value if isinstance(reading.value, list) else [reading.value]
    return [call_in(item) or TextCall(None, None, NOT_A_CALL) for item in items]


@text_call_format("json", start="{")
def json_calls(text: str) -> list[TextCall] | None:
    """One JSON object naming a tool with its "parameters" or "arguments" (Llama 3.1's JSON tool format). Only
    well-formed JSON counts: any JSON object a reply opens with is not mended into a call."""
    reading = read_json(text, mend=False)
    call = None if reading.problem else call_in(reading.value, needs_arguments=True)
    return None if call is None else [call]


def quoted_calls(reply: str) -> Iterator[TextCall]:
    """The calls a reply that is text quotes anywhere (in prose, a fence, inline code, after a format's marker; one
    call, a list of them, or OpenAI's `{"type": "function", "function": …}` shape), read within the bounds. They
    are never run: they are found only so that the user can be told so."""
    for span in spans(reply):
        quoted = reply[span.start : span.end]
        if '"name"' not in quoted and "'name'" not in quoted:
            continue
        reading = read_json(quoted, mend=True)
        for item in reading.value if isinstance(reading.value, list) else [reading.value]:
            if isinstance(item, dict) and isinstance(item.get("function"), dict):
                item = item["function"]
            if (call := call_in(item, needs_arguments=True)) is not None and call.args is not None:
                yield call

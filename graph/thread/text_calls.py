"""Tool calls a model wrote as text in its reply instead of in `tool_calls`, as small local models do.

One parser per call format, registered by name in `TEXT_CALL_PARSERS` (the way vLLM's tool parsers are chosen
with `--tool-call-parser`): Hermes / Qwen's `<tool_call>{"name": …, "arguments": …}</tool_call>` (an unclosed
tag runs to the end, as vLLM's hermes parser reads it), Mistral's `[TOOL_CALLS] [{…}]`, a fenced ```json block
and a bare JSON object, as Llama 3.1's JSON format and Ollama accept (`arguments` or `parameters`). A parser
only finds candidates; `find_text_calls` keeps those its caller accepts (an offered tool with valid arguments),
so everything else stays text.
"""

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import json_repair


@dataclass(frozen=True)
class TextCall:
    """A call found in a reply's text: the tool's name, its arguments and where it was written (`span`)."""

    name: str
    args: dict[str, Any]
    span: tuple[int, int]


TextCallParser = Callable[[str], Iterator[TextCall]]
TEXT_CALL_PARSERS: dict[str, TextCallParser] = {}
# Where each format's calls start in a reply: a streaming reply is shown only up to the first of them.
CALL_STARTS: dict[str, tuple[str, ...]] = {}
# The keys a written call gives its arguments under: OpenAI's and Hermes' "arguments", Llama 3.1's "parameters".
ARGUMENT_KEYS = ("arguments", "parameters", "args")


def text_call_parser(name: str, starts: tuple[str, ...]) -> Callable[[TextCallParser], TextCallParser]:
    """Register a parser for one call format under `name`, whose calls begin with one of `starts` (a later
    registration of the name replaces it)."""

    def register(parser: TextCallParser) -> TextCallParser:
        TEXT_CALL_PARSERS[name] = parser
        CALL_STARTS[name] = starts
        return parser

    return register


def speakable_prefix(text: str) -> str:
    """The part of a reply still streaming that can be shown now: the text before the first place where a call
    written as text may begin (a format's start, or the beginning of one at the very end), without the
    whitespace that ends it (shown once more text follows)."""
    starts = {start for format_starts in CALL_STARTS.values() for start in format_starts}
    cut = min((index for start in starts if (index := text.find(start)) >= 0), default=len(text))
    for start in starts:
        for length in range(len(start) - 1, 0, -1):
            if text.endswith(start[:length]):
                cut = min(cut, len(text) - length)
                break
    return text[:cut].rstrip()


def _decoded(text: str, *, mend: bool) -> Any:
    """The JSON value of `text`; with `mend`, broken JSON mended by json-repair (None when nothing usable)."""
    try:
        return json.loads(text)
    except ValueError:
        if not mend:
            return None
    try:
        return json_repair.loads(text)
    except Exception:  # json-repair gives up on some input: then it is text
        return None


def calls_in(value: Any, span: tuple[int, int]) -> Iterator[TextCall]:
    """The calls a decoded JSON value describes: one object naming a tool, a list of them, or OpenAI's shape
    (`{"type": "function", "function": {...}}`); arguments may be an object or a JSON string of one."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        args = next((item[key] for key in ARGUMENT_KEYS if key in item), {})
        if isinstance(args, str):
            args = _decoded(args, mend=True)
        if isinstance(args, dict):
            yield TextCall(item["name"], args, span)


def _delimited(pattern: re.Pattern[str], text: str) -> Iterator[TextCall]:
    for match in pattern.finditer(text):
        body = next(group for group in match.groups() if group is not None)
        yield from calls_in(_decoded(body.strip(), mend=True), match.span())


HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(\[.*\]|\{.*\})", re.DOTALL)
FENCED = re.compile(r"```[ \t]*(?:json|tool_call|tool_code|javascript)?[ \t]*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


@text_call_parser("hermes", starts=("<tool_call>",))
def hermes_calls(text: str) -> Iterator[TextCall]:
    """`<tool_call>{"name": …, "arguments": …}</tool_call>` (Hermes, Qwen 2.5 and 3 chat templates)."""
    return _delimited(HERMES, text)


@text_call_parser("mistral", starts=("[TOOL_CALLS]",))
def mistral_calls(text: str) -> Iterator[TextCall]:
    """`[TOOL_CALLS] [{"name": …, "arguments": …}]` (Mistral's format, when the server leaves it in the text)."""
    return _delimited(MISTRAL, text)


@text_call_parser("json_fence", starts=("```",))
def fenced_calls(text: str) -> Iterator[TextCall]:
    """A fenced code block holding a call's JSON: ```json {"name": …, "arguments": …} ```."""
    return _delimited(FENCED, text)


@text_call_parser("bare_json", starts=("{", "[{"))
def bare_json_calls(text: str) -> Iterator[TextCall]:
    """A JSON object (or list) naming a tool, written in the reply as it is (Llama 3.1's JSON tool format).

    Only well-formed JSON counts here: the text around it is prose, where mending would invent calls.
    """
    decoder = json.JSONDecoder()
    position = 0
    while (start := _next_json_start(text, position)) >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            position = start + 1
            continue
        yield from calls_in(value, (start, end))
        position = end


def _next_json_start(text: str, position: int) -> int:
    starts = [index for index in (text.find("{", position), text.find("[", position)) if index >= 0]
    return min(starts, default=-1)


def find_text_calls(
    text: str, accept: Callable[[TextCall], TextCall | None]
) -> tuple[list[TextCall], str]:
    """The calls written in `text` that `accept` takes (it may return them corrected), and the text without them.

    Every registered parser reads the text; where two found the same call (a JSON object inside a fenced
    block), the first registered parser's span is the one cut out.
    """
    found: list[TextCall] = []
    for parser in TEXT_CALL_PARSERS.values():
        for candidate in parser(text):
            if any(_overlaps(candidate.span, call.span) for call in found):
                continue
            if (call := accept(candidate)) is not None:
                found.append(call)
    found.sort(key=lambda call: call.span)
    kept, position = [], 0
    for call in found:
        kept.append(text[position : call.span[0]])
        position = call.span[1]
    kept.append(text[position:])
    return found, _tidy("".join(kept)) if found else text


def _overlaps(first: tuple[int, int], second: tuple[int, int]) -> bool:
    return first[0] < second[1] and second[0] < first[1]


def _tidy(text: str) -> str:
    """Text with a cut-out call removed: no run of blank lines left where it stood, no edge whitespace."""
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n", text).strip()

"""Chat-template turn markers a model writes out as text: its reply ends at the first one.

A base model (Gemma 3 270M), or a model served with another model's chat template, writes the template's own
markers as plain text — `<|im_end|>\\n<|im_start|>user\\n…` — and goes on with the conversation as the user.
Nothing after the first marker is the model's reply: `cut_at_turn_marker` ends the reply there, so the invented
turn reaches neither the user nor the thread, and a reply that is only markers is empty (the chat node then gives
its fallback sentence). The markers are registered by chat template in `TURN_MARKERS` (`turn_markers`), the way
`graph.thread.text_calls` registers call formats.

A marker quoted in inline code or a fenced block (an answer about chat templates) is text, not the end of the
reply. While a reply streams, `streamable_part` is what may be shown: the text before the first marker, without
a tail that may still become one. All of it is read in one linear pass.
"""

import functools
import re
from collections.abc import Iterable

TURN_MARKERS: dict[str, tuple[str, ...]] = {}


def turn_markers(template: str, markers: Iterable[str]) -> None:
    """Register the turn markers of a chat template under its name (a later registration of the name replaces it)."""
    TURN_MARKERS[template] = tuple(markers)


turn_markers("chatml", ("<|im_start|>", "<|im_end|>", "<|endoftext|>"))  # SmolLM2, Qwen, Hermes
turn_markers("gemma", ("<start_of_turn>", "<end_of_turn>"))
turn_markers("llama3", ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"))
turn_markers("phi3", ("<|user|>", "<|assistant|>", "<|end|>"))


def _markers() -> tuple[str, ...]:
    """Every registered marker, longest first."""
    return tuple(sorted({marker for markers in TURN_MARKERS.values() for marker in markers}, key=len, reverse=True))


@functools.lru_cache(maxsize=4)
def _scanner(markers: tuple[str, ...]) -> re.Pattern[str]:
    """Fences, backticks, line ends and the `markers` as one pattern."""
    return re.compile("|".join(["```", "`", "\n", *(re.escape(marker) for marker in markers)]))


def first_marker(text: str) -> int | None:
    """Where the first turn marker outside inline code (which ends with its line) and fenced blocks starts; None
    when there is none."""
    fenced = inline = False
    for token in _scanner(_markers()).finditer(text):
        found = token.group()
        if found == "```":
            fenced, inline = not fenced, False
        elif found == "`":
            inline = not inline and not fenced
        elif found == "\n":
            inline = False
        elif not fenced and not inline:
            return token.start()
    return None


def cut_at_turn_marker(text: str) -> str:
    """The reply `text` ends before its first turn marker (trailing whitespace dropped there); unchanged without one."""
    position = first_marker(text)
    return text if position is None else text[:position].rstrip()


def streamable_part(text: str) -> str:
    """What of a reply still streaming may be shown: the text before its first turn marker, without a tail that is
    the beginning of a marker (`<|im_` may become `<|im_end|>`)."""
    position = first_marker(text)
    if position is not None:
        return text[:position]
    tail = max((size for marker in _markers() for size in range(1, len(marker)) if text.endswith(marker[:size])), default=0)
    return text[: len(text) - tail]

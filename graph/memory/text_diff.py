"""What a change to a free-text memory (the instructions) removes and adds, sentence by sentence, shown in full.

The CLI's notes, the `memory_update` stream events, the tool answers and the memory page's history all show a text
change this way: a line `- sentence` for each sentence removed and `+ sentence` for each one added, in order.
"""

import difflib
import re
from collections.abc import Mapping
from typing import Any

# Where a sentence ends: after . ! ? followed by a space, or after a Chinese or Japanese full stop, ! ? or ;.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
REMOVED = "- "
ADDED = "+ "


def sentences(text: str) -> list[str]:
    """The sentences of `text`, line by line, without surrounding spaces or empty ones."""
    return [part.strip() for line in text.splitlines() for part in _SENTENCE_END.split(line) if part.strip()]


def text_of(document: Mapping[str, Any] | None) -> str:
    """The text of a free-text memory's document (`{"memory": text}`); "" for none."""
    text = (document or {}).get("memory")
    return text if isinstance(text, str) else ""


def text_diff(before: str, after: str) -> list[str]:
    """The sentences removed from `before` ("- …") and added in `after` ("+ …"), in order, each in full."""
    old, new = sentences(before), sentences(after)
    lines: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            lines += [REMOVED + sentence for sentence in old[i1:i2]]
            lines += [ADDED + sentence for sentence in new[j1:j2]]
    return lines


def document_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """`text_diff` of two documents of a free-text memory."""
    return text_diff(text_of(before), text_of(after))


def added_text(diff: list[str]) -> str:
    """The sentences a diff adds, one per line."""
    return "\n".join(line.removeprefix(ADDED) for line in diff if line.startswith(ADDED))

"""An export file, read within bounds before anything in it is checked item by item or written.

An import is hostile input, even into the importing user's own memories, and the checks and the write that follow
cost memory and time in proportion to the file. So the file is refused, with one sentence and nothing written,
when it is larger than MAISTRO_IMPORT_MAX_BYTES (checked before it is read, `read_export`), is not UTF-8 JSON,
gives one key twice in an object (which of the two would win depends on the reader), holds a number that is not
finite (`NaN`, `Infinity`, `1e999`: stored, it would become null), holds more than MAISTRO_IMPORT_MAX_ITEMS items
(memory documents and history entries), a text longer than `MAX_IMPORT_TEXT_CHARACTERS`, or nests deeper than
`MAX_IMPORT_DEPTH` levels (`shape_problem`, which also checks exports handed to `import_memories` from Python).
"""

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graph.memory.redaction import redact_text
from graph.memory.store import DONE_LOG
from graph.settings import current_settings

# Deeper than any export the project writes: a document the API server accepts nests at most 64 levels
# (graph/server/limits.py), and an export wraps it in 3 more (section, key, history entry).
MAX_IMPORT_DEPTH = 100
# Longer than any text the project stores: a store value on the server is at most 64 KiB, and a history entry quotes
# a user's message cut to 8,000 estimated tokens (about 32,000 characters).
MAX_IMPORT_TEXT_CHARACTERS = 65_536
# How much of a key an error message shows.
MAX_SHOWN_CHARACTERS = 40


class InvalidExportError(ValueError):
    """The data given to `import_memories` is not a task-maistro memory export, or is beyond an import's bounds."""


def shown(key: Any) -> str:
    """A key as an error message names it: secrets redacted, control characters escaped, cut to 40 characters."""
    text = json.dumps(redact_text(str(key))[0], ensure_ascii=False)[1:-1]
    return text if len(text) <= MAX_SHOWN_CHARACTERS else text[:MAX_SHOWN_CHARACTERS] + "…"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) < len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise InvalidExportError(f'an object gives the key "{shown(repeated)}" twice')
    return document


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise InvalidExportError(f"it holds the number {text[:MAX_SHOWN_CHARACTERS]}, which is not finite")
    return number


def _no_constant(name: str) -> None:
    raise InvalidExportError(f"it holds {name}, which is not a JSON number")


def parse_export(text: str) -> Any:
    """The JSON document in `text`; `InvalidExportError` (one sentence) when it is not JSON, gives a key twice in
    one object, holds a number that is not finite, or nests too deep for the parser."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_float=_finite, parse_constant=_no_constant)
    except InvalidExportError:
        raise
    except RecursionError:
        raise InvalidExportError(f"it nests deeper than {MAX_IMPORT_DEPTH} levels") from None
    except ValueError as error:  # json.JSONDecodeError, and an integer too long to convert
        raise InvalidExportError(f"it is not JSON ({error})") from None


def read_export(path: Path) -> Any:
    """The export in the file at `path`, parsed (`parse_export`); `InvalidExportError` when the file is larger than
    MAISTRO_IMPORT_MAX_BYTES (refused before it is read) or is not UTF-8 text. A byte order mark is allowed."""
    limit = current_settings().import_max_bytes
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        raw = file.read(limit + 1) if size <= limit else b""
    if size > limit or len(raw) > limit:
        described = f"{size:,} bytes" if size > limit else f"more than {limit:,} bytes"
        raise InvalidExportError(
            f"the file is {described}; an import reads at most {limit:,} (MAISTRO_IMPORT_MAX_BYTES)"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidExportError(
            f"it is not UTF-8 text (bad byte at offset {error.start}); save it as UTF-8"
        ) from None
    return parse_export(text)


def _place(where: tuple[Any, ...]) -> str:
    """Where in an export a problem is: the whole export, a section, or one item of a section."""
    if not where:
        return "the export"
    if len(where) == 1:
        return f'"{shown(where[0])}"'
    return f'"{shown(where[0])}" item "{shown(where[1])}"'


def shape_problem(data: Mapping[str, Any]) -> str | None:
    """Why the export `data` is beyond an import's bounds or not plain JSON, in one sentence; None when it is not.

    Its items (the entries of its sections) are at most MAISTRO_IMPORT_MAX_ITEMS; every text, key or value, at most
    `MAX_IMPORT_TEXT_CHARACTERS` long; it nests at most `MAX_IMPORT_DEPTH` levels (a value at the top is at depth 0,
    as `graph.server.limits` counts); and it holds only JSON: text keys, finite numbers. Read without recursion.
    """
    limit = current_settings().import_max_items
    items = sum(len(section) for name, section in data.items() if isinstance(section, Mapping) and name != DONE_LOG)
    logs = data.get(DONE_LOG)
    if isinstance(logs, Mapping):  # kind → its log: each log's entries are items
        items += sum(len(log) if isinstance(log, Mapping) else 1 for log in logs.values())
    if items > limit:
        return f"it holds {items:,} items; an import takes at most {limit:,} (MAISTRO_IMPORT_MAX_ITEMS)"
    pending: list[tuple[Any, int, tuple[Any, ...]]] = [(data, 0, ())]
    while pending:
        node, depth, where = pending.pop()
        if depth > MAX_IMPORT_DEPTH:
            return f"{_place(where)} nests deeper than {MAX_IMPORT_DEPTH} levels"
        if isinstance(node, str):
            if len(node) > MAX_IMPORT_TEXT_CHARACTERS:
                return (f"{_place(where)} holds a text of {len(node):,} characters; "
                        f"the limit is {MAX_IMPORT_TEXT_CHARACTERS:,}")
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"{_place(where)} holds the number {node}, which is not finite"
        elif isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, str):
                    return f"{_place(where)} has a key that is not text ({type(key).__name__})"
                inner = (*where, key) if len(where) < 2 else where
                pending.extend(((key, depth + 1, inner), (child, depth + 1, inner)))
        elif isinstance(node, list):
            pending.extend((child, depth + 1, where) for child in node)
        elif node is not None and not isinstance(node, bool | int):
            return f"{_place(where)} holds a value that is not JSON ({type(node).__name__})"
    return None

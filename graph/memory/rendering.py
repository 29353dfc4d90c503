"""Compact text renderings of the memories for prompts and tool answers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graph.text_tokens import count_text_tokens
from prompts import GUIDANCE_SECTION, MEMORY_SECTION, NOT_SHOWN, NOT_SHOWN_OPEN_AND_CLOSED

if TYPE_CHECKING:  # annotations only: the CLI's tables import this module for `capitalized`
    from graph.memory.kinds import MemoryKind
    from graph.memory.selection import Selection


def capitalized(text: str) -> str:
    """The text with its first letter upper-cased ("profile" → "Profile", "ToDo list" unchanged)."""
    return text[:1].upper() + text[1:]


def render_document(document: Mapping[str, Any] | None) -> str:
    """A document (a profile, a contact) as one line of JSON without empty fields ("" when there is none)."""
    if not document:
        return ""
    filled = {name: value for name, value in document.items() if value not in (None, "", [])}
    return json.dumps(filled, ensure_ascii=False)


def _cell(value: Any) -> str:
    """A field's value in a row: text and numbers as they are, nothing for None, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def render_rows(kind: MemoryKind, documents: Sequence[Mapping[str, Any]]) -> str:
    """A collection's documents as a table: a line naming the schema's fields, then one line of values each."""
    if not documents:
        return ""
    fields = " | ".join(kind.schema.model_fields)
    return "\n".join([f"({fields})", *(_row(kind, document) for document in documents)])


def _row(kind: MemoryKind, document: Mapping[str, Any]) -> str:
    return f"- {' | '.join(_cell(document.get(name)) for name in kind.schema.model_fields)}"


def _document_tokens(kind: MemoryKind, document: Mapping[str, Any], now: datetime | None) -> int:
    """About how many tokens one document adds to its kind's section of the prompt."""
    return count_text_tokens(render_documents(kind, [document], now) if kind.render is not None else _row(kind, document))


def render_documents(kind: MemoryKind, documents: Sequence[Mapping[str, Any]], now: datetime | None = None) -> str:
    """A kind's documents for the prompt: as the kind renders them (a kind with a `deadline_field` told the current
    time `now`, when known), else a text kind's text, a single document's line, or a collection's rows
    (`render_rows`)."""
    if kind.render is not None:
        return kind.render(documents, now=now) if kind.deadline_field and now is not None else kind.render(documents)
    if kind.text:
        return kind.prompt_text(documents[0].get("memory", "")) if documents else ""
    if not kind.collection:
        return render_document(documents[0] if documents else None)
    return render_rows(kind, documents)


def _within_budget(kind: MemoryKind, selection: Selection, now: datetime | None) -> set[str]:
    """The keys of the most relevant documents of `selection` that fit in the kind's `prompt_tokens` (at least one)."""
    by_key = {item.key: item for item in selection.items}
    kept: set[str] = set()
    budget = kind.prompt_tokens or 0
    for key in selection.relevance or by_key:
        budget -= _document_tokens(kind, by_key[key].value, now)
        if budget < 0 and kept:
            break
        kept.add(key)
    return kept


def render_collection(kind: MemoryKind, selection: Selection, now: datetime | None = None) -> str:
    """A collection's documents the prompt shows (`render_documents`, what is due said against `now`): the most
    relevant that fit in the kind's
    `prompt_tokens` (a list of large documents shows fewer of them; no bound: every one chosen), then a count of
    those it leaves out, open and closed (`closed_name`) apart for a kind with a status field."""
    kept = _within_budget(kind, selection, now) if kind.prompt_tokens is not None else {item.key for item in selection.items}
    shown = [item for item in selection.items if item.key in kept]
    dropped = [item.value for item in selection.items if item.key not in kept]
    hidden_open = selection.hidden_open + sum(map(kind.is_open, dropped))
    hidden_closed = selection.hidden_closed + len(dropped) - sum(map(kind.is_open, dropped))
    lines = [render_documents(kind, [item.value for item in shown], now)]
    if kind.status_field and (hidden_open or hidden_closed):
        lines.append(NOT_SHOWN_OPEN_AND_CLOSED.format(open=hidden_open, closed=hidden_closed, closed_name=kind.closed_name))
    elif hidden_open + hidden_closed:
        lines.append(NOT_SHOWN.format(count=hidden_open + hidden_closed))
    return "\n".join(line for line in lines if line)


def joined(names: Sequence[str]) -> str:
    """Names in a sentence: "a", "a and b", "a, b and c"."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _kept(kinds: Sequence[MemoryKind]) -> list[MemoryKind]:
    """The memories a companion keeps track of: the collections (the tutorial's ToDo list), else every kind."""
    return [kind for kind in kinds if kind.collection] or list(kinds)


def kept_memories(kinds: Sequence[MemoryKind]) -> str:
    """What the chat prompt says the assistant helps the user keep track of: "ToDo list" for the tutorial's kinds."""
    return joined([kind.title for kind in _kept(kinds)])


def eager_memories(kinds: Sequence[MemoryKind]) -> str:
    """What the chat prompt says to err on the side of updating: "the todo list" for the tutorial's kinds."""
    return joined([f"the {kind.title.lower()}" for kind in _kept(kinds)])


def tell_user_rules(kinds: Sequence[MemoryKind]) -> str:
    """The chat prompt's rule on telling the user about updates: one line per kind (`MemoryKind.tell_user_rule`)."""
    return "\n".join(kind.tell_user_rule for kind in kinds)


def memory_section(kind: MemoryKind, content: str) -> str:
    """One kind's section of the chat prompt: its memories as facts about the user, or a guidance kind's text as
    something to follow."""
    section = GUIDANCE_SECTION if kind.guidance else MEMORY_SECTION
    return section.format(memory=kind.title, name=kind.name, content=content)

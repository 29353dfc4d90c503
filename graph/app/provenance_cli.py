"""What `maistro why` and `maistro show KIND --past` print: the source of a memory's current value, and the facts it
replaced (`graph.memory.provenance`), read from the store without a model."""

import json
from typing import Any

from langgraph.store.base import BaseStore

from graph.memory.kinds import MemoryKind
from graph.memory.provenance import current_source, past_facts
from graph.memory.store import read_kind


class UnknownMemoryError(LookupError):
    """The kind has no such document or field: the message says which there are, in one sentence."""


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _when(moment: str | None) -> str:
    return moment[:16].replace("T", " ") + " UTC" if moment else "an unknown time"


def source_text(source: dict[str, Any]) -> list[str]:
    """A source as `maistro why` prints it: the quote, then the thread, the date, the model and the change."""
    where = f"thread {source['thread_id']}" if source.get("thread_id") else "no thread (CLI, page, API or import)"
    return [
        f'  said: "{source.get("quote", "")}"',
        f"  {where} · {_when(source.get('said_at'))} · model {source.get('model') or '-'} · change {source.get('change_id', '')[:8]}",
    ]


def _targets(store: BaseStore, kind: MemoryKind, user_id: str, name: str | None) -> list[tuple[str, str | None, Any]]:
    """The memories `maistro why KIND [NAME]` asks about: (key, field, value) each; `UnknownMemoryError` when NAME
    names none."""
    items = read_kind(store, kind, user_id)
    if kind.collection:
        chosen = [
            item for item in items
            if name is None or item.key == name or str(item.value.get(kind.summary_field, "")).casefold() == name.casefold()
        ]
        if name is not None and not chosen:
            raise UnknownMemoryError(f"The {kind.title} has no {kind.label} with the key or {kind.summary_field} {name!r}.")
        return [(item.key, None, item.value.get(kind.summary_field, item.key)) for item in chosen]
    fields = list(kind.schema.model_fields)
    if name is not None and name not in fields:
        raise UnknownMemoryError(f"The {kind.title} has no field {name!r}; its fields are {', '.join(fields)}.")
    document = items[0].value if items else {}
    return [(kind.key, field, document.get(field)) for field in ([name] if name else fields)
            if name or document.get(field) not in (None, "", [])]


def why_lines(store: BaseStore, kind: MemoryKind, user_id: str, name: str | None) -> list[str]:
    """The source of each memory asked about, or a sentence saying none is recorded; `UnknownMemoryError` for a NAME
    that names no document or field."""
    lines = []
    for key, field, value in _targets(store, kind, user_id, name):
        label = f"{kind.name}.{field}" if field else f'{kind.name} "{_value(value)}" ({key})'
        shown = f" = {_value(value)}" if field and value not in (None, "", []) else ""
        lines.append(f"{label}{shown}")
        source = current_source(store, user_id, kind, key, field)
        lines.extend(source_text(source) if source else ["  no source is recorded (empty, or saved before sources were kept)"])
    return lines or [f"The {kind.title} of {user_id} is empty: nothing to trace."]


def why_json(store: BaseStore, kind: MemoryKind, user_id: str, name: str | None) -> list[dict[str, Any]]:
    """The memories asked about with their sources (None when none is recorded), as `maistro why --json` prints them."""
    return [
        {"key": key, "field": field, "value": value, "source": current_source(store, user_id, kind, key, field)}
        for key, field, value in _targets(store, kind, user_id, name)
    ]


def past_lines(store: BaseStore, kind: MemoryKind, user_id: str) -> list[str]:
    """The kind's past facts, the most recently ended first: what held, from when to when, and who said it."""
    lines = []
    for item in past_facts(store, user_id, kind):
        fact = item.value
        what = f"{fact['field']}: {_value(fact['value'])}" if fact.get("field") else f"deleted: {_value(fact['value'])}"
        lines.append(f"{what}  (from {_when(fact.get('valid_from'))} to {_when(fact.get('valid_to'))})")
        if fact.get("source"):
            lines.append(f'  said: "{fact["source"].get("quote", "")}"')
    return lines or [f"The {kind.title} of {user_id} has no past facts: nothing it held was replaced or deleted."]

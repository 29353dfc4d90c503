"""Notes on memory changes, for people: e.g. "ToDo added: Book swim lessons" (the CLI prints them with ✎,
and the update nodes send them to API clients as custom stream events).

A note on an updated document names the fields it changed, and what a field held before when the change
replaced it (`graph.memory.replaced`): "ToDo updated: Pay rent (deadline 2026-12-01 → 2026-12-05)".
A note is one line, except for a free-text kind (the instructions), whose note shows its change in full: a line
for each sentence removed ("- …") and added ("+ …"), and for a change held until the user confirms it, how
to confirm it.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from graph.memory.changes import MemoryChange
from graph.memory.kinds import MemoryKind, UnknownKindError, kind_named
from graph.memory.rendering import capitalized
from graph.memory.replaced import ARROW, field_texts
from graph.memory.text_diff import document_diff

__all__ = ["change_notes"]

# How a free-text change's lines are indented under its note's first line.
INDENT = "  "


def _document_note(kind: MemoryKind, change: MemoryChange) -> str:
    """A note on one document of a collection, named by its summary field: e.g. "ToDo done: Book swim lessons"."""
    summary = (change.after or change.before or {}).get(kind.summary_field) or change.key
    label = capitalized(kind.label)
    if change.action == "created":
        return f"{label} added: {summary}"
    if change.action == "deleted":
        return f"{label} removed: {summary}"
    status = kind.status_field
    if status and status in change.changed_fields() and (change.after or {}).get(status) == "done":
        return f"{label} done: {summary}"
    return f"{label} updated: {summary} ({_fields_text(_changed(change))})"


def _changed(change: MemoryChange) -> list[str]:
    """How a note names each field `change` changed (`graph.memory.replaced.field_texts`)."""
    return field_texts(change.action, change.before, change.after)


def _fields_text(texts: Sequence[str]) -> str:
    """The changed fields in a note's parentheses: joined with "; " once a value is shown (values hold commas)."""
    return ("; " if any(ARROW in text for text in texts) else ", ").join(texts)


def change_notes(artifact: Mapping[str, Any] | None, kinds: Sequence[MemoryKind]) -> list[str]:
    """Notes for the changes an update node reported in its ToolMessage artifact (none when nothing changed), for
    a memory of `kinds`; a failed update and a secret kept out of memory get a note too."""
    if not artifact:
        return []
    secrets = artifact.get("secrets") or []
    withheld = [f"Not saved (secrets are never stored): {', '.join(secrets)}"] if secrets else []
    return _change_notes(artifact, kinds) + withheld


def _change_notes(artifact: Mapping[str, Any], kinds: Sequence[MemoryKind]) -> list[str]:
    changes = [MemoryChange(**change) for change in artifact.get("changes") or []]
    try:
        kind = kind_named(kinds, artifact.get("kind"))
    except UnknownKindError:
        return []
    if artifact.get("failed"):
        return [_refusal_note(kind, artifact)]
    if kind.collection:
        return [_document_note(kind, change) for change in changes]
    if not changes:
        return []
    if kind.text:
        return [_with_diff(f"{capitalized(kind.title)} updated", changes)]
    fields = list(dict.fromkeys(text for change in changes for text in _changed(change) or change.changed_fields()))
    return [f"{capitalized(kind.title)} updated ({_fields_text(fields)})"] if fields else []


def _with_diff(first_line: str, changes: Sequence[MemoryChange], *last_lines: str) -> str:
    """A note whose first line is followed by the free-text changes in full (`graph.memory.text_diff`)."""
    diff = [line for change in changes for line in document_diff(change.before, change.after)]
    lines = [*diff, *last_lines]
    return f"{first_line}:\n" + "\n".join(INDENT + line for line in lines) if lines else first_line


def _kept(artifact: Mapping[str, Any]) -> str:
    """What a failed update's note adds when the update was kept as a pending change (`graph.memory.pending`)."""
    pending = artifact.get("pending")
    return f" (kept as pending change {pending[:8]}, to retry or drop)" if pending else ""


def _refusal_note(kind: MemoryKind, artifact: Mapping[str, Any]) -> str:
    """The note on an update that saved nothing: why, when the update said (with a held change in full, and how to
    confirm it); else that it failed; and the pending change it was kept as."""
    problem = artifact.get("problem") or "the update failed"
    first_line = f"{capitalized(kind.title)} not updated: {problem}{_kept(artifact)}"
    proposal = artifact.get("proposal")
    if not proposal:
        return first_line
    held = MemoryChange("updated", proposal["key"], proposal["before"], proposal["after"])
    return _with_diff(f"{first_line}. Held for you to confirm", [held], f"To save it, send: {proposal['confirm']}")

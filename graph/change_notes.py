"""One-line notes for the user about what a memory update changed ("ToDo added: Book swim lessons")."""

from collections.abc import Mapping
from typing import Any

from graph.history import MemoryChange
from graph.memory_store import INSTRUCTIONS, PROFILE, TODO


def _todo_note(change: MemoryChange) -> str:
    task = (change.after or change.before or {}).get("task") or change.key
    if change.action == "created":
        return f"ToDo added: {task}"
    if change.action == "deleted":
        return f"ToDo removed: {task}"
    if "status" in change.changed_fields() and (change.after or {}).get("status") == "done":
        return f"ToDo done: {task}"
    return f"ToDo updated: {task} ({', '.join(change.changed_fields())})"


def change_notes(artifact: Mapping[str, Any] | None) -> list[str]:
    """Notes for the changes an update node reported in its ToolMessage artifact (none when nothing changed)."""
    if not artifact:
        return []
    secrets = artifact.get("secrets") or []
    withheld = [f"Not saved (secrets are never stored): {', '.join(secrets)}"] if secrets else []
    return _change_notes(artifact) + withheld


def _change_notes(artifact: Mapping[str, Any]) -> list[str]:
    changes = [MemoryChange(**change) for change in artifact.get("changes") or []]
    kind = artifact.get("kind")
    if kind == TODO:
        return [_todo_note(change) for change in changes]
    if kind == PROFILE and changes:
        fields = dict.fromkeys(
            name
            for change in changes
            for name in change.changed_fields()
            if (change.before or {}).get(name) or (change.after or {}).get(name)
        )
        return [f"Profile updated ({', '.join(fields)})"]
    if kind == INSTRUCTIONS and changes:
        return ["Instructions updated"]
    return []

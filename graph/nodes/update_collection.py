"""The update of a collection kind (contacts, a journal): trustcall inserts, patches and deletes its documents."""

from graph.memory.changes import MemoryChange
from graph.memory.context import documents_to_update
from graph.memory.deadlines import zoned_changes
from graph.memory.relative_dates import pinned_deadlines
from graph.memory.rendering import capitalized
from graph.nodes.update import UpdateRequest
from prompts import COLLECTION_UNCHANGED, COLLECTION_UPDATED, LANGUAGE_RULE


def propose_collection(request: UpdateRequest) -> list[MemoryChange]:
    """Documents created, patched and removed from the conversation, among those of the kind relevant to the turn.

    The candidates are the ones the turn's read chose for an update (`graph.memory.context.documents_to_update`),
    with the changes of the turn's earlier rounds applied; a `fresh` request reads the memories again, and what
    it read wins over those changes. The instruction carries the kinds the kind reads as context (the ToDos:
    the user's instructions). New documents get keys derived from the routing call, so a replayed update writes
    the same keys. A deadline written without a UTC offset is taken in the user's zone (`zoned_changes`), and one
    the user's message pins to a single relative day ("tomorrow", "明天") is moved to it (`pinned_deadlines`).
    """
    kind, settings = request.kind, request.context
    memories, existing = documents_to_update(
        request.store,
        settings,
        request.messages,
        request.run.thread_id,
        request.kinds,
        kind,
        request.graph_runtime.reads,
        fresh=request.fresh,
    )
    instruction = kind.instruction.format(
        **memories.context_of(kind, request.kinds), language_rule=LANGUAGE_RULE, now=settings.now_text(memories.zone)
    )
    now = memories.now or settings.now(memories.zone)
    changes = zoned_changes(kind, request.extract(instruction, existing, request.new_key), now.tzinfo)
    return pinned_deadlines(kind, changes, request.user_said[-1] if request.user_said else "", now)


def report_collection(request: UpdateRequest, saved: list[MemoryChange]) -> str:
    """A short report naming each created, updated and deleted document by its summary field."""
    kind = request.kind
    if not saved:
        return COLLECTION_UNCHANGED.format(memory=kind.title)
    lines = []
    for change in saved:
        summary = (change.after or change.before or {}).get(kind.summary_field, change.key)
        detail = f" ({', '.join(change.changed_fields())})" if change.action == "updated" else ""
        lines.append(f"{change.action}: {summary}{detail}")
    return COLLECTION_UPDATED.format(Memory=capitalized(kind.title), changes="\n".join(lines))

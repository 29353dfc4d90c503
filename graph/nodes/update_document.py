"""The update of a single-document kind (the profile): one document per user, created once and then patched by
trustcall."""

from graph.memory.changes import MemoryChange
from graph.memory.context import turn_memories
from graph.memory.rendering import capitalized
from graph.memory.store import namespace, search_all
from graph.nodes.update import UpdateRequest
from prompts import DOCUMENT_UNCHANGED, DOCUMENT_UPDATED, LANGUAGE_RULE


def propose_document(request: UpdateRequest) -> list[MemoryChange]:
    """The kind's document patched (or created) from the conversation; at most one change. The instruction
    carries the kinds the kind reads as context (`MemoryKind.context_kinds`) and the user's time, from the turn's
    read."""
    kind, settings = request.kind, request.context
    existing = {item.key: item.value for item in search_all(request.store, namespace(kind, request.user_id))}
    memories = turn_memories(
        request.store, settings, request.messages, request.run.thread_id, request.kinds, request.graph_runtime.reads
    )
    context = memories.context_of(kind, request.kinds)
    instruction = kind.instruction.format(**context, language_rule=LANGUAGE_RULE, now=settings.now_text(memories.zone))
    return request.extract(instruction, existing, lambda _: kind.key)[-1:]


def report_document(request: UpdateRequest, saved: list[MemoryChange]) -> str:
    """Which of the document's fields changed, or that none did."""
    memory = request.kind.title
    if fields := saved and saved[0].changed_fields():
        return DOCUMENT_UPDATED.format(Memory=capitalized(memory), fields=", ".join(fields))
    return DOCUMENT_UNCHANGED.format(memory=memory)

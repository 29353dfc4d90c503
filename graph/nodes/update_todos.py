"""The ToDo list's proposer: insert, patch and delete ToDo items with trustcall, whatever the list's size."""

from graph.memory.changes import MemoryChange
from graph.memory.context import documents_to_update
from graph.memory.kinds import INSTRUCTIONS
from graph.nodes.update import UpdateRequest
from prompts import LANGUAGE_RULE


def propose_todos(request: UpdateRequest) -> list[MemoryChange]:
    """ToDo items created, patched and removed from the conversation, among those relevant to the turn.

    The candidates are the ones the turn's read chose (`graph.memory.context`), with the changes of the
    turn's earlier rounds applied; a `fresh` request reads the list again, and what it read wins over those
    changes. The instruction carries the user's instructions for ToDos. New items get keys derived from the
    routing call, so a replayed update writes the same keys.
    """
    settings = request.context
    memories, existing = documents_to_update(
        request.store,
        settings,
        request.messages,
        request.run.thread_id,
        request.kinds,
        request.kind,
        request.graph_runtime.reads,
        fresh=request.fresh,
    )
    instruction = request.kind.instruction.format(
        instructions=memories.text(INSTRUCTIONS),
        language_rule=LANGUAGE_RULE,
        now=settings.now_text(),
    )
    return request.extract(instruction, existing, request.new_key)

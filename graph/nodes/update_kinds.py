"""Which update node each memory kind gets: the recipe (`graph.nodes.update`) with the kind's proposer and report.

Every kind is free text, a collection or a single document, and gets that shape's proposer; what a kind does
differently (the ToDos read the instructions as context) is in its declaration (`MemoryKind`).
"""

from functools import partial

from graph.backends.model import ChatModelFactory
from graph.memory.kinds import MemoryKind
from graph.nodes.update import Propose, Report, update_memory
from graph.nodes.update_collection import propose_collection, report_collection
from graph.nodes.update_document import propose_document, report_document
from graph.nodes.update_text import propose_text, report_text
from graph.runtime import GraphRuntime


def update_steps(kind: MemoryKind) -> tuple[Propose, Report]:
    """The proposer and the report of `kind`'s update node."""
    if kind.text:
        return propose_text, report_text
    if kind.collection:
        return propose_collection, report_collection
    return propose_document, report_document


def update_node(kind: MemoryKind, graph_runtime: GraphRuntime, chat_model: ChatModelFactory) -> partial:
    """The update node of `kind` (one of `graph_runtime`'s kinds): `(state, config, runtime)` → the state update."""
    propose, report = update_steps(kind)
    return partial(
        update_memory, chat_model=chat_model, kind=kind, graph_runtime=graph_runtime, propose=propose, report=report
    )

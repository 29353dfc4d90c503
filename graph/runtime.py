"""What one built graph keeps while it runs: its memory kinds, its caches and its background reader.

`graph.agent` makes one `GraphRuntime` for each graph it builds and hands it to every node (nothing is kept at
module level, and nothing starts at import). It rides with the compiled graph as one of its callbacks: when a
run ends it starts the background reads of the lists the run read by their heads (`graph.memory.list_reads`),
and `runtime_of(compiled)` finds it again (`close_graph` closes it; a test calls `clear()`).
"""

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.pregel import Pregel

from graph.memory.context import MemoryReads
from graph.memory.kinds import MemoryKind, check_kinds
from graph.nodes.extraction import Extractors
from graph.recent import Recent
from graph.run_context import RUNS_KEPT

# How many trustcall extractors a graph keeps (one per model, schema and options in use).
EXTRACTORS_KEPT = 32
# How many routing messages of the graph's chat node are remembered (their updates normally run next, here).
ROUTINGS_KEPT = 1024


class GraphRuntime(BaseCallbackHandler):
    """One graph's memory `kinds` and what it keeps between the steps and runs it serves: each run's resolved
    context (`runs`), the memories its turns read (`reads`), its trustcall extractors (`extractors`) and the
    routing messages its chat node made (`routed`, how an update tells a first run from a replay)."""

    run_inline = True

    def __init__(self, kinds: Sequence[MemoryKind]) -> None:
        self.kinds = check_kinds(kinds)
        self.runs: Recent = Recent(RUNS_KEPT)
        self.reads = MemoryReads()
        self.extractors: Extractors = Recent(EXTRACTORS_KEPT)
        self.routed: Recent[str, None] = Recent(ROUTINGS_KEPT)

    def on_chain_end(self, outputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        """After a run (one without a parent), read the lists it read by their heads whole, in the background."""
        if parent_run_id is None:
            self.reads.reader.start()

    def on_chain_error(self, error: BaseException, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any) -> None:
        """After a failed run, too."""
        if parent_run_id is None:
            self.reads.reader.start()

    def clear(self) -> None:
        """Forget everything kept (as a fresh process would start), once the background reads under way are done."""
        self.reads.clear()
        self.runs.clear()
        self.extractors.clear()
        self.routed.clear()

    def close(self) -> None:
        """Wait for the background reads and stop their thread: before the graph's storage closes."""
        self.reads.reader.close()


def runtime_of(compiled: Pregel) -> GraphRuntime:
    """The runtime of a graph `graph.agent` built; `LookupError` for any other graph."""
    for callback in (compiled.config or {}).get("callbacks") or []:
        if isinstance(callback, GraphRuntime):
            return callback
    raise LookupError("This graph was not built by graph.agent: it has no GraphRuntime.")

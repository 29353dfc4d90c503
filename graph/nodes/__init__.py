"""The graph's nodes: the chat node, one update node per memory kind, and the trustcall extraction they share.

Public modules: `chat` (the `task_maistro` node) and `update` (the recipe every update node follows:
propose changes, commit them with their history, answer the tool calls). `update_kinds` picks each kind's
proposer and report by the kind's shape (`update_document`, `update_collection`, `update_text`);
`graph.agent` wires the nodes; `extraction` and `summary` (older messages fold into one summary, with a model
call) serve them.
"""

__all__ = ["chat", "update"]

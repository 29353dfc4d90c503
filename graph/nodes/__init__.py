"""The graph's nodes: the chat node, one module per update node, and the trustcall extraction they share.

Public modules: `chat` (the `task_maistro` node) and `update` (the recipe every update node follows:
propose changes, commit them with their history, answer the tool calls). `graph.agent` wires the update
nodes; `extraction` serves them.
"""

__all__ = ["chat", "update"]

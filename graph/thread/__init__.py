"""Short-term memory, the thread: the model's replies as they enter it, tool-call bookkeeping, token estimates and
input limits (the rolling summary, which calls a model, is a step of the nodes: `graph.nodes.summary`).

Public modules: `model_message` (the boundary that makes every model reply valid for the thread: ids, invalid calls,
near-miss routing values), `text_calls` (a reply that is a call written as text, one parser per format, registered
by name; a quoted call is text), `turn_markers` (a reply ends before a chat-template turn marker written out),
`bounded_json` (model text read as JSON within a size and a depth bound, in linear time, never raising), `view` (a
thread read once), `tool_calls` (every tool call gets exactly one answer), `reply_last` (a reply given beside its
calls moves after their answers) and `tokens` (offline token estimates and the bounds on a message).
"""

__all__ = ["bounded_json", "model_message", "reply_last", "text_calls", "tokens", "tool_calls", "turn_markers", "view"]

"""Short-term memory, the thread: tool-call bookkeeping, the rolling summary, token estimates and input limits.

Public modules: `tool_calls` (every tool call gets exactly one answer), `reply_last` (a reply given beside
its calls moves after their answers), `summary` (older messages fold into one summary) and `tokens` (offline
token estimates and the bounds on a message).
"""

__all__ = ["reply_last", "summary", "tokens", "tool_calls"]

"""Short-term memory, the thread: tool-call bookkeeping, the rolling summary, token estimates and input limits.

Public modules: `tool_calls` (every tool call gets exactly one answer), `summary` (older messages fold into
one summary) and `tokens` (offline token estimates and the bounds on a message).
"""

__all__ = ["summary", "tokens", "tool_calls"]

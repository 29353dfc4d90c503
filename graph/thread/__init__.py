"""Short-term memory, the thread: tool-call bookkeeping, the rolling summary, token estimates and input limits."""

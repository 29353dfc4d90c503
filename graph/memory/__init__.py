"""Long-term memory in the store: namespaces and reads, ToDo selection, changes and history, redaction,
rendering for prompts, export/import/forget.

Public modules: `kinds` (the memory kinds: `MemoryKind`, `DEFAULT_MEMORY_KINDS`), `store` (where each memory
lives and complete reads of it: `namespace`, `read_kind`, `read_text`), `changes` (history and undo) and `admin` (one user's data as a whole:
export, import, forget). The turn's memory context, selection, redaction and rendering serve the nodes.
"""

__all__ = ["admin", "changes", "kinds", "store"]

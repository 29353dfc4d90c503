"""Long-term memory in the store: namespaces and reads, ToDo selection, changes and history, redaction,
rendering for prompts, export/import/forget."""

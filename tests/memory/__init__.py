"""Long-term memory: the kinds, their documents, history and undo, secrets, export and import."""

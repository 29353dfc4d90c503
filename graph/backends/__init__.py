"""What the agent runs on: the chat model, SQLite or PostgreSQL storage, and embeddings.

Public modules: `model` (`load_chat_model` and the endpoint errors), `storage` (`open_storage`, `open_store`,
`close_storage`: SQLite in the data directory, or PostgreSQL) and `embeddings` (the optional semantic index,
`index_config`). The rest implements storage for them: the transactional stores, checkpoint retention, ToDo
reads and change log, per-thread chat locks.
"""

__all__ = ["embeddings", "model", "storage"]

"""What the agent runs on: the chat model, SQLite or PostgreSQL storage, and embeddings."""

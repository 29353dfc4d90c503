"""Storage: SQLite and PostgreSQL, durability, crashes, concurrent writers, indexes, forgetting."""

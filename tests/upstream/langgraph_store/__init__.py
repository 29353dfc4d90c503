"""LangGraph's own store tests, run against the stores the project opens.

`test_upstream_sqlite_store.py` and `test_upstream_postgres_store.py` are copies of
libs/checkpoint-sqlite/tests/test_store.py and libs/checkpoint-postgres/tests/test_store.py from
langchain-ai/langgraph (commit f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f, MIT License), with their store class
imported from `project_stores`: the classes `open_storage` builds (batches as transactions, the project's
SQLite connection settings) with the ToDo change log's table and triggers installed by `setup()`. Each file
names the lines that differ. To update them, copy the files again and re-apply those imports.

`conftest.py` gives what upstream's PostgreSQL conftest gave (the server URL, the vector types, the fake
embeddings) and deselects the `halfvec` cases: the pgvector of the test server's `pgserver` wheel (0.6)
has no `halfvec` type, whatever the store. Upstream's autouse fixture that empties the tables of the server's
default database is left out: every test here uses a database of its own, and the default one is shared.
"""

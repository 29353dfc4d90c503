"""The upstream store suites here run against the stores `open_storage` returns, change log and all."""

import pytest

from graph.backends.collection_changes import TABLE
from graph.backends.storage import close_storage, open_storage
from graph.memory.store import namespace
from testing.stored_names import TODO
from tests.upstream.langgraph_store.project_stores import ProjectPostgresStore, ProjectSqliteStore


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_suites_store_is_the_one_open_storage_returns(backend, request, tmp_path):
    url = request.getfixturevalue("fresh_database") if backend == "postgres" else ""
    _, opened = open_storage(tmp_path / "data", database_url=url, checkpointer=False)
    close_storage(None, opened)
    suite_store = ProjectPostgresStore if backend == "postgres" else ProjectSqliteStore
    assert suite_store.__bases__ == (type(opened),)

    with suite_store.from_conn_string(url or str(tmp_path / "suite.sqlite")) as store:
        store.setup()
        store.put(namespace(TODO, "Ann"), "a", {"task": "Water the plants"})
        with store._cursor() as cur:
            cur.execute(f"SELECT key FROM {TABLE}")
            rows = cur.fetchall()
    assert [row[0] if backend == "sqlite" else row["key"] for row in rows] == ["a"], "the triggers log the ToDo"

"""Durable by default: threads and memories survive processes and tolerate concurrent writers."""

import subprocess
import sys
from pathlib import Path

from langgraph.store.postgres import PostgresStore

from graph import build_graph, close_graph
from graph.backends.sqlite import DATABASE_FILE
from testing.helpers import todos
from testing.scripted_model import ScriptedChatModel
from testing.scripted_session import run_users, task_keeper

ROOT = Path(__file__).resolve().parents[2]


def session(target, count: int, *users: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "testing.scripted_session", str(target), str(count), *users],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> None:
    out, err = process.communicate(timeout=240)
    assert process.returncode == 0 and out.strip() == "ok", err


def reader(**storage):
    return build_graph(**storage, chat_model=lambda _settings: ScriptedChatModel())


def test_a_new_process_sees_memories_and_thread_history(tmp_path):
    finish(session(tmp_path, 2, "Lance"))

    agent = reader(data_dir=tmp_path)

    assert set(todos(agent)) == {"Lance task 0", "Lance task 1"}
    history = agent.get_state({"configurable": {"thread_id": "Lance-thread"}}).values["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"] * 2


def test_default_data_dir_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_DATA_DIR", str(tmp_path / "custom"))
    build_graph()
    assert (tmp_path / "custom" / DATABASE_FILE).exists()


def test_database_url_from_the_environment_selects_postgres(fresh_database, monkeypatch):
    monkeypatch.setenv("MAISTRO_DATABASE_URL", fresh_database)
    agent = build_graph()
    assert isinstance(agent.store, PostgresStore)
    close_graph(agent)


def test_two_processes_write_to_sqlite_at_once(tmp_path):
    processes = [session(tmp_path, 6, user) for user in ("Ann", "Ben")]
    for process in processes:
        finish(process)

    agent = reader(data_dir=tmp_path)
    for user in ("Ann", "Ben"):
        assert set(todos(agent, user)) == {f"{user} task {i}" for i in range(6)}


def test_eight_threads_share_one_sqlite_graph(tmp_path):
    model = task_keeper()
    agent = build_graph(tmp_path, chat_model=lambda _settings: model)
    users = [f"user{n}" for n in range(8)]

    run_users(agent, users, 3)

    for user in users:
        assert set(todos(agent, user)) == {f"{user} task {i}" for i in range(3)}


def test_four_processes_of_eight_users_on_postgres(fresh_database):
    groups = [[f"p{p}u{u}" for u in range(8)] for p in range(4)]
    processes = [session(fresh_database, 3, *users) for users in groups]
    for process in processes:
        finish(process)

    agent = reader(database_url=fresh_database)
    for user in (user for users in groups for user in users):
        assert set(todos(agent, user)) == {f"{user} task {i}" for i in range(3)}
    close_graph(agent)

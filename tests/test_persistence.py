"""Durable by default: SQLite threads and memories survive processes and tolerate concurrent writers."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from graph import build_graph
from graph.persistence import DATABASE_FILE
from tests.conftest import todos
from graph.scripted_model import ScriptedChatModel
from tests.scripted_session import run_turns, task_keeper

ROOT = Path(__file__).resolve().parents[1]


def session(data_dir: Path, user_id: str, thread_id: str, count: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_session", str(data_dir), user_id, thread_id, str(count)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> None:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0 and out.strip() == "ok", err


def test_a_new_process_sees_memories_and_thread_history(tmp_path):
    finish(session(tmp_path, "Lance", "1", 2))

    agent = build_graph(tmp_path, chat_model=lambda _settings: ScriptedChatModel())

    assert set(todos(agent)) == {"Lance task 0", "Lance task 1"}
    history = agent.get_state({"configurable": {"thread_id": "1"}}).values["messages"]
    assert [m.type for m in history] == ["human", "ai", "tool", "ai"] * 2


def test_default_data_dir_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MAISTRO_DATA_DIR", str(tmp_path / "custom"))
    build_graph()
    assert (tmp_path / "custom" / DATABASE_FILE).exists()


def test_two_processes_write_at_once(tmp_path):
    processes = [session(tmp_path, user, f"{user}-thread", 6) for user in ("Ann", "Ben")]
    for process in processes:
        finish(process)

    agent = build_graph(tmp_path, chat_model=lambda _settings: ScriptedChatModel())
    for user in ("Ann", "Ben"):
        assert set(todos(agent, user)) == {f"{user} task {i}" for i in range(6)}


def test_eight_threads_share_one_graph(tmp_path):
    model = task_keeper()
    agent = build_graph(tmp_path, chat_model=lambda _settings: model)
    users = [f"user{n}" for n in range(8)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda user: run_turns(agent, user, f"{user}-thread", 3), users))

    for user in users:
        assert set(todos(agent, user)) == {f"{user} task {i}" for i in range(3)}

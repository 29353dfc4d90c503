"""On Aegra a thread keeps its last MAISTRO_KEEP_TURNS turns of checkpoints and runs (graph.server.retention), and
goes on after the sweep as before it; and the store has no HNSW index, which per-user search does not use
(see bench/vector_index.py)."""

import time

import psycopg
from langgraph_sdk import get_sync_client

from testing.aegra_server import aegra_instances
from testing.langgraph_server import new_thread, play, token_environment
from testing.openai_stub import OpenAIStub, text_reply
from testing.postgres_server import create_database

KEEP = 2
TURNS = 6
SWEEP_MINUTES = 0.02
USER, TOKEN = "ada", "ada-token-0123456789abcdef"
INPUT_CHECKPOINTS = "SELECT count(*) FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = '' AND metadata ->> 'source' = 'input'"
RUNS = "SELECT count(*) FROM runs WHERE thread_id = %s"


def counts(database_url: str, thread_id: str) -> tuple[int, int]:
    """The thread's turns of checkpoints (its input checkpoints) and its runs, in the database."""
    with psycopg.connect(database_url) as conn:
        return tuple(conn.execute(query, (thread_id,)).fetchone()[0] for query in (INPUT_CHECKPOINTS, RUNS))


VECTOR_INDEXES = "SELECT indexname FROM pg_indexes WHERE tablename = 'store_vectors' AND indexdef ILIKE '%%USING hnsw%%'"


def test_aegra_keeps_each_threads_last_turns_of_checkpoints_and_runs_and_no_vector_index(tmp_path, postgres_url):
    database = create_database(postgres_url)
    with OpenAIStub(lambda request: text_reply("Noted.")) as stub:
        env = token_environment(tmp_path, stub, {USER: TOKEN}, MAISTRO_KEEP_TURNS=str(KEEP),
                                MAISTRO_TTL_SWEEP_MINUTES=str(SWEEP_MINUTES))
        with aegra_instances(tmp_path, env, database) as (url,):
            client = get_sync_client(url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            thread_id = new_thread(client)
            for number in range(TURNS):
                play(client, thread_id, f"message {number}")
            deadline = time.monotonic() + 30
            while counts(database, thread_id) != (KEEP, KEEP) and time.monotonic() < deadline:
                time.sleep(0.5)
            swept = counts(database, thread_id)
            turn = play(client, thread_id, "one more")
    with psycopg.connect(database) as conn:
        vector_indexes = conn.execute(VECTOR_INDEXES).fetchall()

    assert swept == (KEEP, KEEP), f"{swept[0]} turns of checkpoints and {swept[1]} runs kept, not {KEEP} of each"
    said = [message["content"] for message in turn.messages if message["type"] == "human"]
    assert said == [f"message {number}" for number in range(TURNS)] + ["one more"], "the thread lost nothing"
    assert vector_indexes == [], "store_vectors has no HNSW index"


HISTORY_KEEP = 3
HISTORY_ROWS = "SELECT count(*) FROM store WHERE prefix = 'history.ada'"
PRUNED = "SELECT coalesce(max(pruned), 0) FROM maistro_history_pruned WHERE prefix = 'history.ada'"


def test_aegra_prunes_each_users_history_to_what_maistro_history_keep_keeps(tmp_path, postgres_url):
    """Ten history entries of a user, MAISTRO_HISTORY_KEEP=3: Aegra's retention sweep keeps the newest three and
    counts the seven it pruned, as the project's own stores do."""
    from langgraph.store.postgres import PostgresStore

    database = create_database(postgres_url)
    with PostgresStore.from_conn_string(database) as store:
        store.setup()
        for number in range(10):
            store.put(("history", USER), f"entry-{number}", {"time": f"2026-11-{number + 1:02d}T10:00:00+00:00", "order": 0})
    with OpenAIStub(lambda request: text_reply("Noted.")) as stub:
        env = token_environment(tmp_path, stub, {USER: TOKEN}, MAISTRO_HISTORY_KEEP=str(HISTORY_KEEP),
                                MAISTRO_TTL_SWEEP_MINUTES=str(SWEEP_MINUTES))
        with aegra_instances(tmp_path, env, database):
            deadline = time.monotonic() + 30
            with psycopg.connect(database, autocommit=True) as conn:
                while conn.execute(HISTORY_ROWS).fetchone()[0] != HISTORY_KEEP and time.monotonic() < deadline:
                    time.sleep(0.5)
                kept = [row[0] for row in conn.execute("SELECT key FROM store WHERE prefix = 'history.ada' ORDER BY key")]
                pruned = conn.execute(PRUNED).fetchone()[0]
    assert kept == ["entry-7", "entry-8", "entry-9"], kept
    assert pruned == 7

"""A long list's first read by its head (`graph.backends.list_index`, `graph.memory.list_reads`): on SQLite and
PostgreSQL it selects what reading the whole list would, for ToDos and for an added kind, whatever the texts
hold (any case, CJK, numbers, JSON escapes, odd values); it fetches only what a turn can show; it is refused
while the index is not whole (never described, a reset table, a kind described otherwise since); every writer
of the database keeps the index; and closing the store waits for a background read."""

import json
import random
import sqlite3
import sys
from datetime import datetime
from typing import Literal, Optional

import psycopg
import pytest
from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from psycopg.types.json import Jsonb
from pydantic import BaseModel, Field

from graph import MemoryKind
from graph.backends.list_index import INDEX
from graph.backends.sqlite import DATABASE_FILE
from graph.backends.storage import close_storage, open_storage, open_store
from graph.memory import list_reads
from graph.memory.context import MemoryReads, read_turn_memories
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, TODO
from graph.memory.selection import _LITERAL, ListCache, superset_pattern
from graph.memory.store import namespace
from graph.run_context import RunContext
from testing.helpers import fill


class Helper(BaseModel):
    """Who helps with an errand."""

    name: str = Field(description="Their name.")


class Errand(BaseModel):
    """An errand: a kind with its own status, deadline and text fields, a nested record among them."""

    title: str = Field(description="The errand.")
    notes: list[str] = Field(default_factory=list, description="Notes.")
    state: Literal["open", "waiting", "closed"] = Field("open", description="Where it stands.")
    due: Optional[datetime] = Field(None, description="When it is due.")
    helper: Optional[Helper] = Field(None, description="Who helps.")


ERRAND = MemoryKind(
    name="errand", schema=Errand, collection=True, description="errands", label="errand", status_field="state",
    open_statuses=("open", "waiting"), deadline_field="due",
)
KINDS = (*DEFAULT_MEMORY_KINDS, ERRAND)
WORDS = [
    "Buy", "stamps", "STAMPS", "ÄRGER", "ärger", "İstanbul", "istanbul", "\u212aelvin", "kelvin", "straße", "STRASSE",
    "ΣΑΣ", "σας", "买邮票", "邮票", "東京タワー", "서울", "2026", "7", "07", "15", "٣7", "seeded", "Dentist's", "x\ny",
    'quote"d', "back\\slash", "tab\there", "emoji😀", "\u0007bell", "done", "task", "status",
]
QUERIES = [
    "buy stamps", "stamps", "ärger", "ÄRGER", "istanbul", "İstanbul", "kelvin", "straße", "strasse", "σας", "ΣΑΣ",
    "邮票", "买", "东京", "東京", "서울", "2026", "7", "15", "07", "٣7", "seeded 7", "dentist", "bell", "slash", "done",
    "task", "status", "kik", "nothing matches this", "", "y", "buy 15 stamps 2026 邮票",
]


def todo(rng: random.Random, n: int) -> dict:
    """A ToDo with odd values in every field the selection reads."""
    return {
        "task": f"{' '.join(rng.sample(WORDS, 3))} {n}",
        "time_to_complete": rng.choice([15, None, "ten"]),
        "deadline": rng.choice([None, "", "2026-12-03T10:00:00+02:00", "2026-12-03T09:00:00", "2026-12-02", "soon", 5, True]),
        "solutions": rng.choice([[], [rng.choice(WORDS)], [rng.choice(WORDS), rng.choice(WORDS)], "a string", [1, {"x": "ärger"}]]),
        "status": rng.choice(["not started", "in progress", "done", "archived", None, 1, "NOT STARTED"]),
    }


def errand(rng: random.Random, n: int) -> dict:
    """An errand with odd values, a nested helper among its text fields."""
    return {
        "title": f"{' '.join(rng.sample(WORDS, 2))} {n}",
        "notes": rng.choice([[], [rng.choice(WORDS)]]),
        "state": rng.choice(["open", "waiting", "closed", None]),
        "due": rng.choice([None, "2026-12-05T08:00:00Z", "2026-12-04", "later"]),
        "helper": rng.choice([None, {"name": rng.choice(WORDS)}]),
    }


def selected(store, kind: MemoryKind, query: str, limit: int, reads: MemoryReads | None = None):
    """The selection of the user's list of `kind` a turn whose user says `query` shows, read afresh (keeping what a
    process keeps in `reads`)."""
    settings = RunContext(user_id="u", collection_prompt_limit=limit, collection_update_limit=limit)
    return read_turn_memories(store, settings, [HumanMessage(query)], (kind,), reads).prompt[kind.name]


def both_ways(store, kind: MemoryKind, query: str, limit: int, monkeypatch) -> tuple:
    """The selection read by the head (HEAD_FROM 1) and read whole (HEAD_FROM beyond any list)."""
    monkeypatch.setattr(list_reads, "HEAD_FROM", 1)
    by_head = selected(store, kind, query, limit)
    monkeypatch.setattr(list_reads, "HEAD_FROM", sys.maxsize)
    whole = selected(store, kind, query, limit)
    return by_head, whole


@pytest.mark.parametrize("kind, make", [(TODO, todo), (ERRAND, errand)], ids=["todo", "errand"])
def test_the_head_selects_what_the_whole_list_would(database, monkeypatch, kind, make):
    """Odd texts and values, ties in time, updates and deletes: for every query and limit, the head's selection
    (items, their order of relevance, the counts left out) is the whole list's."""
    rng = random.Random(25)
    with open_store(**database) as store:
        store.describe_lists(KINDS)
        store.batch([PutOp(namespace(kind, "u"), f"k-{n:04d}", make(rng, n)) for n in range(300)])
        store.batch([PutOp(namespace(kind, "u"), f"k-{n:04d}", make(rng, n)) for n in rng.sample(range(300), 40)])
        store.batch([PutOp(namespace(kind, "u"), f"k-{n:04d}", None) for n in rng.sample(range(300), 20)])
        read_by_head = []
        monkeypatch.setattr(list_reads, "rank_entries", _counting(list_reads.rank_entries, read_by_head))
        for query in QUERIES:
            for limit in (6, 12):
                by_head, whole = both_ways(store, kind, query, limit, monkeypatch)
                assert by_head == whole, (query, limit)
        assert len(read_by_head) >= len(QUERIES), "the head was read for every narrowable query"


def _counting(rank, calls: list):
    def counted(prepared, *args):
        calls.append(prepared)
        return rank(prepared, *args)

    return counted


def test_the_head_fetches_only_what_a_turn_can_show(database):
    """3,000 ToDos, 40 of them open with a deadline, one named: the head holds the counts of all and only what
    the orderings can pick."""
    with open_store(**database) as store:
        store.describe_lists(KINDS)
        fill(store, "u", 2000, status="done")
        fill_from = [PutOp(namespace(TODO, "u"), f"open-{n:04d}", {
            "task": f"Water the fern {n}", "status": "not started", "solutions": [],
            "deadline": f"2026-12-{1 + n % 28:02d}T10:00:00+00:00" if n < 40 else None,
        }) for n in range(999)]
        store.batch([*fill_from, PutOp(namespace(TODO, "u"), "okapi", {"task": "Brush the okapi", "status": "done"})])
        head = store.read_list_head("u", TODO, ["okapi"], 4, 24, least=1)
        assert (head.total, head.open_total) == (3000, 999)
        keys = {document.key for document in head.documents}
        assert "okapi" in keys and len(keys) <= 4 + 24 + 40 + 1, len(keys)


def test_a_list_whose_index_is_not_whole_is_read_whole(database):
    """Never described, a row missing from the index (a reset), a term SQL cannot narrow, or a list shorter than
    the reader asks: the head is refused (until the rows are indexed again)."""
    with open_store(**database) as store:
        fill(store, "u", 50)
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1) is None, "never described"
        store.describe_lists(KINDS)
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1).total == 50, "indexed when described"
        with store._list_index_cursor() as cur:
            cur.execute(f"DELETE FROM {INDEX} WHERE key = 'item-00003'")
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1) is None, "a row missing"
        store.reindex_lists()
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1).total == 50
        assert store.read_list_head("u", TODO, ["kik"], 4, 24, least=1) is None, "a term SQL cannot narrow"
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=50).total == 50
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=51) is None, "shorter than asked: read whole"


def test_a_kind_described_otherwise_is_read_whole_until_described_again(database):
    """Another description of a kind (here: other open values) gives the rows another version: a process that
    keeps the old description reads the list whole; describing it indexes every row again."""
    narrower = MemoryKind(
        name="errand", schema=Errand, collection=True, description="errands", label="errand", status_field="state",
        open_statuses=("waiting",), deadline_field="due",
    )
    with open_store(**database) as store:
        store.describe_lists([ERRAND])
        store.batch([PutOp(namespace(ERRAND, "u"), f"e{n}", {"title": f"Errand {n}", "state": "open"}) for n in range(5)])
        assert store.read_list_head("u", ERRAND, [], 4, 24, least=1).open_total == 5
        store.describe_lists([narrower])
        assert store.read_list_head("u", ERRAND, [], 4, 24, least=1) is None
        assert store.read_list_head("u", narrower, [], 4, 24, least=1).open_total == 0


def test_every_writer_of_the_database_keeps_the_index(database, monkeypatch):
    """Rows written by another connection in plain SQL (JSON with \\u escapes among them) and by LangGraph's own
    store class are indexed in the statement that writes them: the head still selects what the whole list would."""
    with open_store(**database) as store:
        store.describe_lists(KINDS)
        fill(store, "u", 30)
        escaped = {"task": "买邮票 Ärger", "status": "not started", "solutions": ["東京", "x\ny"], "deadline": None}
        if database["database_url"]:
            with psycopg.connect(database["database_url"], autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO store (prefix, key, value) VALUES ('todo.u', 'raw', %s)", (Jsonb(escaped),)
                )
                conn.execute("DELETE FROM store WHERE prefix = 'todo.u' AND key = 'item-00001'")
            with PostgresStore.from_conn_string(database["database_url"]) as other:
                other.put(("todo", "u"), "theirs", {"task": "Their ärger", "status": "in progress"})
        else:
            with sqlite3.connect(database["data_dir"] / DATABASE_FILE) as conn:
                conn.execute(
                    "INSERT INTO store (prefix, key, value) VALUES ('todo.u', 'raw', ?)", (json.dumps(escaped),)
                )
                conn.execute("DELETE FROM store WHERE prefix = 'todo.u' AND key = 'item-00001'")
            other = SqliteStore(sqlite3.connect(database["data_dir"] / DATABASE_FILE, check_same_thread=False))
            other.put(("todo", "u"), "theirs", {"task": "Their ärger", "status": "in progress"})
            other.conn.close()
        for query in ("邮票", "ärger", "東京", "their", "batch 1", "y"):
            by_head, whole = both_ways(store, TODO, query, 6, monkeypatch)
            assert by_head == whole, query
            assert store.read_list_head("u", TODO, [], 4, 24, least=1).total == 31


def test_closing_the_reader_waits_for_a_background_read(tmp_path):
    """A list wanted whole, read in the background as the graph closes: its reader closes after the read, which
    keeps the list, and the store closes after it (`close_graph`); nothing fails."""
    _, store = open_storage(tmp_path, "", "", checkpointer=False)
    store.describe_lists(KINDS)
    fill(store, "u", 3000)
    reader = list_reads.ListReader(ListCache())
    reader.read_later(store, store, TODO, "u")
    reader.start()
    reader.close()
    close_storage(None, store)
    assert reader.lists.take(store, (TODO.name, "u")) is not None


def test_a_pattern_keeps_only_characters_no_other_character_lowers_to():
    """`superset_pattern` keeps a character literal only if LIKE and ILIKE match it in every text whose lower case
    holds it: no character but its ASCII upper case lowers to it (for a CJK character, none but itself)."""
    for code in range(sys.maxunicode + 1):
        character = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        for produced in character.lower():
            if _LITERAL.fullmatch(produced) and produced != character:
                assert produced.isascii() and character == produced.upper(), (hex(code), produced)
    assert superset_pattern("stamps") == "%stamps%"
    assert superset_pattern("istanbul") == "%stanbul%"
    assert superset_pattern("邮票") == "%邮票%"
    assert superset_pattern("ärger") == "%rger%"
    assert superset_pattern("ik") is None


def test_a_truncated_store_table_is_indexed_again_when_the_change_log_finds_it(fresh_database):
    """`TRUNCATE store` fires no row trigger, so the index keeps rows that are gone: the head is refused, the turn's
    read in a process that held the list finds the table reset, installs the log again and indexes the lists
    again, and the head is whole again."""
    with open_store(data_dir=None, database_url=fresh_database, embeddings="") as store:
        store.describe_lists(KINDS)
        fill(store, "u", 40)
        reads = MemoryReads()
        selected(store, TODO, "batch", 6, reads)
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            conn.execute("TRUNCATE store")
        fill(store, "u", 10)
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1) is None
        settings = RunContext(user_id="u", collection_prompt_limit=6, collection_update_limit=6)
        read = read_turn_memories(store, settings, [HumanMessage("batch")], (TODO,), reads)  # the process held the list
        assert read.prompt[TODO.name].hidden_open == 4
        assert store.read_list_head("u", TODO, ["batch"], 4, 24, least=1).total == 10


class Quoted(BaseModel):
    """A kind whose text field is named by an alias no JSON path can hold as it is."""

    title: str = Field(alias='the "title"', description="The title.")


def test_a_kind_with_a_field_no_path_can_name_is_not_indexed_and_read_whole(database, monkeypatch):
    quoted = MemoryKind(name="quoted", schema=Quoted, collection=True, description="quoted things", label="quoted")
    with open_store(**database) as store:
        store.describe_lists([quoted])
        store.batch([PutOp(namespace(quoted, "u"), f"q{n}", {'the "title"': f"Title {n}"}) for n in range(5)])
        assert store.read_list_head("u", quoted, ["title"], 4, 24, least=1) is None
        by_head, whole = both_ways(store, quoted, "title 3", 2, monkeypatch)
        assert by_head == whole and len(whole.items) == 2

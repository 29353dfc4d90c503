"""Bounded long-term context: past a limit, prompts carry the ToDos relevant to the turn plus counts."""

import time
from datetime import datetime, timezone

from langgraph.store.base import Item
from langgraph.store.memory import InMemoryStore

from graph.backends.storage import open_store
from graph.memory.context import MemoryReads, select_collection
from graph.memory.kinds import TODO as TODO_KIND
from graph.memory.selection import PreparedList, deadline_of, entry, stored_entry, terms, text_terms
from graph.memory.store import namespace
from graph.server.memory_page import open_first
from graph.thread.tokens import count_tokens
from testing.helpers import fill, todos, turn
from testing.scripted_model import patch_where, replace, route, say
from testing.stored_names import TODO


def test_short_lists_are_shown_whole():
    store = InMemoryStore()
    fill(store, "u", 12)
    selection = select_collection(TODO_KIND, store, "u", "anything", limit=30)
    assert len(selection.items) == 12 and selection.hidden_open == selection.hidden_closed == 0


def test_a_named_item_is_found_in_a_list_of_two_thousand():
    store = InMemoryStore()
    fill(store, "u", 2000)
    store.put(namespace(TODO, "u"), "item-zebra", {"task": "Feed the zebra at the city farm", "status": "not started",
                                                   "solutions": ["Bring hay"], "deadline": None, "time_to_complete": 5})
    fill(store, "u", 10)

    selection = select_collection(TODO_KIND, store, "u", "I fed the zebra, mark it done", limit=30)

    assert "item-zebra" in [item.key for item in selection.items]
    assert len(selection.items) == 30
    assert selection.hidden_open + selection.hidden_closed == 2001 - 30


def test_chinese_names_match_by_character_bigrams():
    store = InMemoryStore()
    fill(store, "u", 100)
    store.put(namespace(TODO, "u"), "swim", {"task": "给女儿报名游泳课", "status": "not started", "solutions": ["问问社区中心"],
                                             "deadline": None, "time_to_complete": 30})
    assert {"游泳", "报名"} <= terms("游泳课报名好了")
    selection = select_collection(TODO_KIND, store, "u", "游泳课报名好了", limit=10)
    assert "swim" in [item.key for item in selection.items]


def test_closed_items_are_counted_not_shown():
    store = InMemoryStore()
    fill(store, "u", 40, status="done")
    store.put(namespace(TODO, "u"), "open", {"task": "Book dentist", "status": "not started", "solutions": ["Dr. Lee"],
                                             "deadline": None, "time_to_complete": 5})
    selection = select_collection(TODO_KIND, store, "u", "hello", limit=10)
    assert [item.key for item in selection.items] == ["open"]
    assert selection.hidden_open == 0 and selection.hidden_closed == 40


def chat_prompt_tokens(agent, model, count: int, user_id: str) -> tuple[int, int]:
    fill(agent.store, user_id, count)
    model.add("task_maistro", route("todo"), say("Done."))
    model.add("update_todos", patch_where("(batch 7)", replace("/status", "done")))
    turn(agent, "I renewed my passport (batch 7), it's done.", user_id=user_id, thread_id=user_id)
    assert todos(agent, user_id)["Renew passport (batch 7)"]["status"] == "done"
    chat, extraction = model.calls_in("task_maistro")[-2], model.calls_in("update_todos")[-1]
    return count_tokens(chat.messages), count_tokens(extraction.messages)


def test_prompt_cost_stays_flat_as_the_list_grows(agent, model):
    small_chat, small_extraction = chat_prompt_tokens(agent, model, 10, "small")
    large_chat, large_extraction = chat_prompt_tokens(agent, model, 500, "large")

    assert large_chat <= 2 * small_chat, (small_chat, large_chat)
    assert large_extraction <= 2 * small_extraction, (small_extraction, large_extraction)


def test_a_list_read_again_prepares_only_what_changed(tmp_path, monkeypatch):
    prepared = []

    def counted_entry(document, *kind):
        prepared.append(document.key)
        return stored_entry(document, *kind)

    monkeypatch.setattr("graph.memory.list_reads.stored_entry", counted_entry)
    with open_store(tmp_path, "", "") as store:
        fill(store, "u", 200)
        reads = MemoryReads()
        select_collection(TODO_KIND, store, "u", "hello", limit=30, reads=reads)
        assert len(prepared) == 200
        prepared.clear()

        assert "item-00042" not in [i.key for i in select_collection(TODO_KIND, store, "u", "okapi", limit=30, reads=reads).items]
        store.put(namespace(TODO, "u"), "item-00042", {"task": "Brush the okapi", "status": "not started",
                                                      "solutions": [], "deadline": None, "time_to_complete": 5})
        store.delete(namespace(TODO, "u"), "item-00007")
        selection = select_collection(TODO_KIND, store, "u", "okapi", limit=30, reads=reads)

        assert prepared == ["item-00042"], "unchanged items are not split into terms again"
        assert "item-00042" in [item.key for item in selection.items]
        assert selection.hidden_open + selection.hidden_closed + len(selection.items) == 199
        assert reads.lists.take(store, ("todo", "u")) is not None


def test_the_memory_page_and_the_prompt_read_a_deadline_without_a_zone_alike(monkeypatch):
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        now = datetime.now(timezone.utc)
        naive = Item(value={"task": "naive", "status": "not started", "deadline": "2026-12-01T10:00:00"},
                     key="a", namespace=("todo", "u"), created_at=now, updated_at=now)
        aware = Item(value={"task": "aware", "status": "not started", "deadline": "2026-12-01T09:00:00-05:00"},
                     key="b", namespace=("todo", "u"), created_at=now, updated_at=now)
        page_order = [item.key for item in open_first(TODO_KIND, [aware, naive])]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()

    assert deadline_of(naive.value, "deadline") < deadline_of(aware.value, "deadline")
    assert page_order == ["a", "b"], "10:00 without a zone is UTC, before 09:00 at UTC-5"


def test_the_first_read_of_a_long_list_splits_no_item_into_terms(database, monkeypatch):
    split = []

    def counted_text_terms(text):
        split.append(text)
        return text_terms(text)

    monkeypatch.setattr("graph.memory.selection.text_terms", counted_text_terms)
    dentist = {"task": "Call the dentist about the crown", "status": "not started", "solutions": ["Ring at 9"],
               "deadline": None, "time_to_complete": 10}
    with open_store(**database) as store:
        fill(store, "u", 10_000)
        store.put(namespace(TODO, "u"), "item-dentist", dentist)
        selection = select_collection(TODO_KIND, store, "u", "Mark everything about the dentist done", limit=30)
        assert "item-dentist" in [item.key for item in selection.items]
        assert len(split) < 20, f"the first read split {len(split)} texts into terms (the query's lines only)"

        split.clear()
        store.put(namespace(TODO, "u"), "item-dentist", {**dentist, "status": "done"})
        selection = select_collection(TODO_KIND, store, "u", "Is the dentist done?", limit=30)
        assert [item.value["status"] for item in selection.items if item.key == "item-dentist"] == ["done"]
        assert len(split) < 20, "a later read splits only the changed items and the query"


TRICKY = ["Call mum_dad at 10:30", "数学作业 and 游泳", "café crème brûlée", "İstanbul ＡＢＣ trip", "x² and ٣٤ items",
          "re-do the 2nd draft", "a 中 b", "中", "abcdef abc", "the theme of theses", "100 1000 10", "字a字"]


def test_a_term_is_found_by_one_search_over_the_texts_as_by_splitting_each():
    now = datetime.now(timezone.utc)
    items = [Item(value={"task": task, "solutions": [task[::-1]]}, key=f"k{n}", namespace=("todo", "u"),
                  created_at=now, updated_at=now) for n, task in enumerate(TRICKY * 3)]
    prepared = PreparedList(TODO_KIND, [entry(item, TODO_KIND) for item in items])
    every_term = {term for e in prepared.entries.values() for term in text_terms(e.text)} | {"zebra", "字"}
    for term in sorted(every_term):
        expected = [e.item.key for e in reversed(prepared.by_recency) if term in text_terms(e.text)]
        assert list(prepared.keys_with(term)) == expected, term

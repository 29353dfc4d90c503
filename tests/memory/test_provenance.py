"""Where each memory came from and what it replaced, on SQLite and PostgreSQL: every accepted change records its
source (thread, message id, quoted words, time, model) in its history entry and as the memory's current source,
written with the change; a replaced value or a deleted document is kept as a past fact with the time it held; an undo
puts the sources back; history retention leaves the sources alone; a long or secret-bearing message is quoted
bounded and redacted; the update's stream event carries the sources."""

from datetime import datetime, timedelta, timezone

from langchain_core.messages import HumanMessage

from graph.memory.changes import list_history, undo_change
from graph.memory.kinds import DEFAULT_MEMORY_KINDS, kind_named
from graph.memory.provenance import (
    QUOTE_CHARS,
    all_sources,
    current_source,
    past_facts,
    source_from_entry,
    sources_before_of,
)
from graph.nodes.update import MEMORY_UPDATE_EVENT
from graph.settings import current_settings
from testing.helpers import config, profile_of, todos, turn
from testing.scripted_model import calls, patch_where, profile, remove_where, replace, route, say, todo
from testing.stored_names import PROFILE, PROFILE_KEY, TODO

PROFILE_KIND = kind_named(DEFAULT_MEMORY_KINDS, PROFILE)
TODO_KIND = kind_named(DEFAULT_MEMORY_KINDS, TODO)
SAID_SF = "I'm Lance and I live in San Francisco."
SAID_OAKLAND = "I moved to Oakland last week."


def move_to_oakland(agent, model) -> list:
    """Two turns: the profile is created in San Francisco (thread "1"), then patched to Oakland (thread "2")."""
    model.add("task_maistro", route("user"), say("Nice to meet you."))
    model.add("update_profile", calls(profile(name="Lance", location="San Francisco")))
    turn(agent, SAID_SF, thread_id="1")
    model.add("task_maistro", route("user"), say("Noted the move."))
    model.add("update_profile", patch_where("San Francisco", replace("/location", "Oakland")))
    return turn(agent, SAID_OAKLAND, thread_id="2")


def test_a_replaced_field_keeps_its_source_and_becomes_a_past_fact(agent, model):
    thread = move_to_oakland(agent, model)

    location = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location")
    name = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "name")
    latest = list_history(agent.store, "Lance")[-1]
    asked = next(m for m in thread if isinstance(m, HumanMessage))
    assert location == {
        "change_id": latest["id"],
        "thread_id": "2",
        "message_id": asked.id,
        "quote": SAID_OAKLAND,
        "said_at": location["said_at"],
        "model": current_settings().model,
    }
    assert source_from_entry(latest) == location, "the history entry carries the same source"
    assert latest["source"] == {name: location[name] for name in ("message_id", "said_at", "model")}, (
        "the entry stores no thread, quote or id twice: its own fields hold them"
    )
    assert datetime.fromisoformat(location["said_at"]).tzinfo is not None
    assert (name["quote"], name["thread_id"]) == (SAID_SF, "1"), "a field the change left keeps its own source"
    (fact,) = [item.value for item in past_facts(agent.store, "Lance", PROFILE_KIND)]
    assert fact == {
        "kind": PROFILE,
        "key": PROFILE_KEY,
        "field": "location",
        "value": "San Francisco",
        "valid_from": name["said_at"],
        "valid_to": location["said_at"],
        "source": name,
        "replaced_by": latest["id"],
    }


def test_an_undo_puts_the_value_and_its_source_back_and_the_past_fact_goes(agent, model):
    move_to_oakland(agent, model)
    first = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "name")
    second = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location")

    undo = undo_change(agent.store, "Lance")

    assert profile_of(agent)["location"] == "San Francisco"
    assert current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location") == first
    assert past_facts(agent.store, "Lance") == [], "the value undone was never true"
    undo_change(agent.store, "Lance", undo["id"])
    assert profile_of(agent)["location"] == "Oakland"
    assert current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location") == second


def test_an_undone_new_document_loses_the_source_its_entry_does_not_list(agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Book swim lessons", solutions=["Call the pool"])))
    turn(agent, "Remind me to book swim lessons.")
    (entry,) = list_history(agent.store, "Lance")
    assert entry["sources_before"] == {}, "a new document had no source: nothing is stored for it"

    undo_change(agent.store, "Lance")

    assert todos(agent) == {} and all_sources(agent.store, "Lance") == {}


def test_an_entry_written_with_its_whole_source_reads_the_same(agent, model):
    move_to_oakland(agent, model)
    latest = list_history(agent.store, "Lance")[-1]
    whole = source_from_entry(latest)
    name = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "name")
    location_key = f"{PROFILE}:{PROFILE_KEY}:location"
    older = latest | {"source": whole, "sources_before": sources_before_of(PROFILE_KIND, latest)}

    assert source_from_entry(older) == whole
    assert sources_before_of(PROFILE_KIND, older) == sources_before_of(PROFILE_KIND, latest) == {location_key: name}
    assert sources_before_of(PROFILE_KIND, latest | {"sources_before": None}) is None, "an entry older than sources"


def test_a_deleted_document_is_a_past_fact_and_loses_its_source(agent, model):
    model.add("task_maistro", route("todo"), say("Added."))
    model.add("update_todos", calls(todo("Book swim lessons", solutions=["Call the pool"])))
    turn(agent, "Remind me to book swim lessons.")
    (key,) = [item.key for item in agent.store.search(("todo", "Lance"))]
    added = current_source(agent.store, "Lance", TODO_KIND, key)
    model.add("task_maistro", route("todo"), say("Removed."))
    model.add("update_todos", remove_where("Book swim lessons"))

    turn(agent, "Forget the swim lessons, the pool closed.")

    assert todos(agent) == {}
    assert current_source(agent.store, "Lance", TODO_KIND, key) is None
    (fact,) = [item.value for item in past_facts(agent.store, "Lance", TODO_KIND)]
    assert (fact["field"], fact["value"]["task"], fact["source"]) == (None, "Book swim lessons", added)
    assert fact["valid_from"] == added["said_at"] < fact["valid_to"]


def test_sources_outlive_the_history_that_retention_prunes(agent, model, monkeypatch):
    move_to_oakland(agent, model)
    before = all_sources(agent.store, "Lance")
    monkeypatch.setenv("MAISTRO_HISTORY_KEEP", "1")

    agent.store.prune_history()

    assert len(list_history(agent.store, "Lance")) == 1
    assert all_sources(agent.store, "Lance") == before
    assert current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "name")["quote"] == SAID_SF


def test_the_quote_is_bounded_and_redacted(agent, model):
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8" * 3
    said = f"My API key is {secret} and I live in Oakland. " + "I really like it here. " * 40
    model.add("task_maistro", route("user"), say("Noted."))
    model.add("update_profile", calls(profile(location="Oakland")))

    turn(agent, said)

    quote = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location")["quote"]
    assert len(quote) <= QUOTE_CHARS and quote.endswith("…")
    assert secret not in quote and "I live in Oakland" in quote


def test_the_update_event_carries_the_source_of_each_change_saved(agent, model):
    model.add("task_maistro", route("user", content="Noted."))
    model.add("update_profile", calls(profile(location="Oakland")))

    (event,) = [
        payload[MEMORY_UPDATE_EVENT]
        for payload in agent.stream({"messages": [("user", SAID_OAKLAND)]}, config(), stream_mode="custom")
    ]

    stored = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location")
    assert event["sources"] == [stored] and stored["quote"] == SAID_OAKLAND


def test_the_source_is_dated_by_the_message_time_the_client_sent(agent, model):
    model.add("task_maistro", route("user"), say("Noted."))
    model.add("update_profile", calls(profile(location="Oakland")))
    sent = datetime.now(timezone(timedelta(hours=-8))).replace(microsecond=0) - timedelta(hours=3)

    turn(agent, SAID_OAKLAND, message_time=sent.isoformat())

    source = current_source(agent.store, "Lance", PROFILE_KIND, PROFILE_KEY, "location")
    assert datetime.fromisoformat(source["said_at"]) == sent and source["said_at"].endswith("+00:00")

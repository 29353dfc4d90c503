"""Store namespaces for any user id, and complete reads past the store's default page of 10."""

import pytest
from langgraph.store.memory import InMemoryStore

from graph.memory.store import namespace, search_all, user_from_label, user_label
from testing.stored_names import TODO


@pytest.mark.parametrize("user_id", ["lance.martin@example.com", "a%2Eb", "张伟", "🦊 fox", "..", "Lance", "*", "a*b"])
def test_user_labels_are_valid_and_round_trip(user_id):
    label = user_label(user_id)
    assert "." not in label and user_from_label(label) == user_id
    InMemoryStore().put(namespace(TODO, user_id), "k", {"task": "x"})


def test_labels_of_different_users_differ():
    assert user_label("a.b") != user_label("a%2Eb")
    assert user_label("*") != user_label("%2A")


@pytest.mark.parametrize("wildcard", ["*", "?", "[a]", "%", "_"])
def test_no_user_id_reaches_another_users_namespaces(tmp_path, wildcard):
    """Every read, list and forget of a user whose id looks like a pattern stays inside that user's data."""
    from graph.backends.storage import open_store
    from graph.memory.admin import export_memories, forget_user, user_items
    from testing.helpers import remember

    with open_store(tmp_path) as store:
        remember(store, "alice")
        remember(store, wildcard)
        assert {item.namespace[1] for item in user_items(store, wildcard)} == {user_label(wildcard)}
        assert len(export_memories(store, wildcard)["todo"]) == 2

        class NoThreads:
            def list(self, *args, **kwargs):
                return iter(())

        receipt = forget_user(store, NoThreads(), wildcard)
        assert (receipt.memories, receipt.threads) == (4, 0)
        assert len(user_items(store, "alice")) == 4 and user_items(store, wildcard) == []


def test_search_all_pages_past_the_default_limit():
    store = InMemoryStore()
    for n in range(437):
        store.put(namespace(TODO, "u"), f"k{n}", {"n": n})
    assert len(store.search(namespace(TODO, "u"))) == 10
    assert sorted(item.value["n"] for item in search_all(store, namespace(TODO, "u"))) == list(range(437))

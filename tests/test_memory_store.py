"""Store namespaces for any user id, and complete reads past the store's default page of 10."""

import pytest
from langgraph.store.memory import InMemoryStore

from graph.memory.store import TODO, namespace, search_all, user_from_label, user_label


@pytest.mark.parametrize("user_id", ["lance.martin@example.com", "a%2Eb", "张伟", "🦊 fox", "..", "Lance"])
def test_user_labels_are_valid_and_round_trip(user_id):
    label = user_label(user_id)
    assert "." not in label and user_from_label(label) == user_id
    InMemoryStore().put(namespace(TODO, user_id), "k", {"task": "x"})


def test_labels_of_different_users_differ():
    assert user_label("a.b") != user_label("a%2Eb")


def test_search_all_pages_past_the_default_limit():
    store = InMemoryStore()
    for n in range(437):
        store.put(namespace(TODO, "u"), f"k{n}", {"n": n})
    assert len(store.search(namespace(TODO, "u"))) == 10
    assert sorted(item.value["n"] for item in search_all(store, namespace(TODO, "u"))) == list(range(437))

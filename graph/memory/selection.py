"""Which ToDo items a turn sees: all of a short list, or past a limit the ones relevant to the turn.

Relevance, in order: items the user names (word and CJK-bigram overlap, rarer words weigh more), items
found by the store's semantic index when one is configured, the most recently changed items ("it's
done"), the soonest deadlines, then the most recent open items. Everything else is only counted, so a
turn's prompt stays the same size however long the list grows.
"""

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.store.base import BaseStore, Item

from graph.memory.store import TODO, namespace, read_todos

OPEN_STATUSES = ("not started", "in progress")
RECENT_SHARE = 6
_WORD = re.compile(r"[^\W\d_]{3,}|\d+", re.UNICODE)
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")


@dataclass(frozen=True)
class TodoSelection:
    """The items a prompt shows (oldest first) and how many open and closed items it leaves out."""

    items: list[Item]
    hidden_open: int = 0
    hidden_closed: int = 0


@functools.lru_cache(maxsize=8192)
def terms(text: str) -> frozenset[str]:
    """Search terms of a text: lower-cased words of 3+ letters, numbers, and CJK character bigrams."""
    lowered = text.lower()
    words = {word for word in _WORD.findall(_CJK_RUN.sub(" ", lowered))}
    bigrams = {run[i : i + 2] for run in _CJK_RUN.findall(lowered) for i in range(max(len(run) - 1, 1))}
    return frozenset(words | bigrams)


def recent_user_text(messages: Sequence[AnyMessage], turns: int = 3) -> str:
    """The user's last few messages, the query for choosing relevant items."""
    users = [m.text for m in messages if isinstance(m, HumanMessage)]
    return "\n".join(users[-turns:])


def _searchable(item: Item) -> str:
    return " ".join([item.value.get("task", ""), *item.value.get("solutions", [])])


def named_items(items: Sequence[Item], query: str) -> list[Item]:
    """Items sharing terms with the query, best first; rare terms count more than common ones."""
    wanted = terms(query)
    if not wanted:
        return []
    item_terms = {item.key: terms(_searchable(item)) & wanted for item in items}
    frequency = Counter(term for found in item_terms.values() for term in found)
    weight = {term: math.log(1 + len(items) / count) for term, count in frequency.items()}
    scored = [(sum(weight[t] for t in item_terms[item.key]), item) for item in items if item_terms[item.key]]
    return [item for _, item in sorted(scored, key=lambda pair: (-pair[0], -pair[1].updated_at.timestamp()))]


def _deadline(item: Item) -> datetime:
    parsed = datetime.fromisoformat(item.value["deadline"])
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _semantic_hits(store: BaseStore, user_id: str, query: str, limit: int) -> list[Item]:
    if not (query and getattr(store, "index_config", None)):
        return []
    return list(store.search(namespace(TODO, user_id), query=query, limit=limit))


def select_todos(store: BaseStore, user_id: str, query: str, limit: int) -> TodoSelection:
    """The user's ToDo items for one turn: all of them up to `limit`, else the `limit` most relevant."""
    items = read_todos(store, user_id)
    if len(items) <= limit:
        return TodoSelection(items)
    open_items = [item for item in items if item.value.get("status") in OPEN_STATUSES]
    by_recency = sorted(items, key=lambda item: item.updated_at, reverse=True)
    candidates = [
        *named_items(items, query)[: limit // 2],
        *_semantic_hits(store, user_id, query, limit // 4),
        *by_recency[: limit // RECENT_SHARE],
        *sorted((i for i in open_items if i.value.get("deadline")), key=_deadline)[: limit // RECENT_SHARE],
        *(item for item in by_recency if item.value.get("status") in OPEN_STATUSES),
    ]
    chosen: dict[str, Item] = {}
    for item in candidates:
        if len(chosen) == limit:
            break
        chosen.setdefault(item.key, item)
    shown = [item for item in items if item.key in chosen]
    hidden_open = sum(1 for item in open_items if item.key not in chosen)
    return TodoSelection(shown, hidden_open, len(items) - len(shown) - hidden_open)

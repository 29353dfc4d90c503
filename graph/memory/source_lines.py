"""The sources of the memories a chat prompt shows, for a turn that asks where a memory came from; the past facts,
for a turn that asks what held before.

A turn whose latest message asks about a memory's origin ("why do you think I live in Oakland?", "where did you get
that?", "how do you know …?", "who told you …?") gets, after the memories, one line per memory shown with a source:
the date and the user's words (`graph.memory.provenance`), and a rule to answer from them and to say so when a memory
has none. A turn that asks what held before ("where did I live before?", "what was my job previously?") gets the
most recently ended past facts (`PAST_SHOWN`, each with when it held). Any other turn's prompt carries neither, so the
prompt stays as long as it was (the chat prompt's budget at 10,000 ToDos and over long threads, `python -m
bench.run`). The questions are recognised in English and Chinese ("你怎么知道我住在奥克兰?", "我以前住在哪里?").
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import BaseStore

from graph.memory.kinds import MemoryKind
from graph.memory.provenance import read_sources, source_key
from graph.memory.store import PAST, namespace
from prompts import PAST_SECTION, SOURCES_SECTION

# The most characters of a quote a prompt line carries (the whole quote is in the store, `maistro why` prints it).
PROMPT_QUOTE_CHARS = 120
_ASKS_SOURCE = re.compile(
    r"\b(why do you (think|believe|say|have|know)|why did you (save|note|write|remember)|where did (you|that|this|it) "
    r"(get|come|hear|learn|read)|where('s| is| does) (that|this|it) (from|come)|how do you know|who told you|"
    r"what makes you think|when did i (say|tell|mention))\b",
    re.IGNORECASE,
)
_ASKS_SOURCE_ZH = re.compile(
    r"你(为什么|为啥|凭什么)(觉得|认为|以为|说|知道|记)|你怎么(知道|会知道|觉得)|谁(告诉|跟)你|你(是)?从哪(里|儿)?(知道|听|得知|看|来)|"
    r"(这|那|这个|那个)(是)?从哪(里|儿)?来的|我什么时候(说|告诉|提)过"
)


_ASKS_PAST = re.compile(
    r"\b(where|what|who|which|how)\b[^.!?]*\b(before|previously|formerly|used to|in the past)\b|"
    r"\b(old|previous|former) (address|job|city|home|name|location|instructions)\b",
    re.IGNORECASE,
)
_ASKS_PAST_ZH = re.compile(
    r"(以前|之前|原来|过去|从前|上一[个份次])[^。！？?]*(哪|什么|谁|几|多少)|(哪|什么|谁)[^。！？?]*(以前|之前|原来|过去|从前)"
)
# How many past facts a turn that asks about the past shows: the most recently ended.
PAST_SHOWN = 20


def asks_about_past(text: str) -> bool:
    """Whether the user's message asks what one of their memories held before."""
    return _ASKS_PAST.search(text) is not None or _ASKS_PAST_ZH.search(text) is not None


def past_section(store: BaseStore, user_id: str) -> str:
    """The prompt's section of the user's most recently ended past facts (at most PAST_SHOWN, read as one page)."""
    items = store.search(namespace(PAST, user_id), limit=PAST_SHOWN)
    facts = sorted((item.value for item in items if isinstance(item.value, dict)),
                   key=lambda fact: str(fact.get("valid_to", "")), reverse=True)
    lines = [_past_line(fact) for fact in facts]
    return PAST_SECTION.format(lines="\n".join(lines) or "(nothing they held was replaced or deleted)")


def _past_line(fact: Mapping[str, Any]) -> str:
    what = f"{fact.get('kind')}.{fact['field']}" if fact.get("field") else f"{fact.get('kind')} (deleted)"
    value = fact.get("value")
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    since = str(fact.get("valid_from") or "")[:10] or "an unknown date"
    return f"- {what}: {shown} (from {since} to {str(fact.get('valid_to', ''))[:10]})"


def asks_for_source(text: str) -> bool:
    """Whether the user's message asks where a memory came from."""
    return _ASKS_SOURCE.search(text) is not None or _ASKS_SOURCE_ZH.search(text) is not None


def _said(source: Mapping[str, Any]) -> str:
    quote = source.get("quote", "")
    if len(quote) > PROMPT_QUOTE_CHARS:
        quote = quote[: PROMPT_QUOTE_CHARS - 1].rstrip() + "…"
    date = str(source.get("said_at", ""))[:10] or "an unknown date"
    return f'on {date} the user said: "{quote}"'


def source_lines(kind: MemoryKind, documents: Sequence[tuple[str, Mapping[str, Any]]], sources: Mapping[str, Any]) -> list[str]:
    """One line per memory of `kind` among `documents` ((key, document) pairs) whose source is known: each field of a
    single document, each document of a collection (named by its summary field)."""
    lines = []
    for key, document in documents:
        if kind.collection:
            if source := sources.get(source_key(kind.name, key)):
                lines.append(f'- {kind.name} "{document.get(kind.summary_field, key)}": {_said(source)}')
            continue
        for field in kind.schema.model_fields:
            if document.get(field) not in (None, "", []) and (source := sources.get(source_key(kind.name, key, field))):
                lines.append(f"- {kind.name}.{field}: {_said(source)}")
    return lines


def sources_section(
    store: BaseStore, user_id: str, kinds: Sequence[MemoryKind], shown: Mapping[str, Sequence[tuple[str, Mapping[str, Any]]]]
) -> str:
    """The prompt's section of the sources of the memories `shown` (by kind name, the (key, document) pairs the
    prompt shows), read by key: as many reads as memories shown, however many the user has."""
    keys = [
        source_key(kind.name, key, None if kind.collection else field)
        for kind in kinds for key, _ in shown.get(kind.name, ())
        for field in ((None,) if kind.collection else kind.schema.model_fields)
    ]
    sources = {key: value for key, value in read_sources(store, user_id, keys).items() if value}
    lines = [line for kind in kinds for line in source_lines(kind, shown.get(kind.name, ()), sources)]
    return SOURCES_SECTION.format(lines="\n".join(lines) or "(no memory shown has a recorded source)")

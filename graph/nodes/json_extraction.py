"""Memory updates from a model that answers in JSON (`graph.backends.json_calls`): the kind's own documents, not
trustcall's JSON patches, and only what the user said.

trustcall asks for `PatchDoc` calls (a plan in prose and RFC 6902 patches with free-form values) beside the
schema's own calls and a `RemoveDoc`, and retries in a loop: a schema too open to bound and a task too hard for
the small models that need JSON. Here the model gets one forced call whose arguments are the kind's news
(`news_tool`): for one document, its fields (null where nothing is new; a list holds only new items); for a
collection, the `new` documents, the `changed` ones (by their number in the prompt, with the fields that change)
and the `removed` ones, each part only when the kind allows it (`inserts`, `patches`, `deletes`). The answer
becomes the same `MemoryChange`s trustcall's would, under the same keys.

Before anything is kept, every text the user would have had to say (the kind's text fields, not its
`suggested_fields`) is checked against the user's messages (`graph.memory.grounding`): a value they did not say
is dropped; and a document is changed or removed only when the user's latest message names it (its summary
field). Nothing is doubled: a kind's documents are told apart by their summary field, compared by its words alone
(case, spacing and punctuation aside), so a new document left without its required fields, named like a listed
one (a small model echoes the listed documents as new ones) or like one created earlier in the same answer (the
same task twice, with two lists of solutions) is not created, and a change that would name a document like
another one is not made. A model that gave nothing usable changed nothing; one that answered
in text or with JSON that does not fit fails the update, as trustcall's would.
"""

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from graph.backends.model import model_errors, quiet
from graph.memory.changes import MemoryChange, same_document
from graph.memory.grounding import UserWords, grounded_value
from graph.memory.kinds import MemoryKind
from graph.nodes.extraction import UnusableOutputError
from prompts import (
    JSON_COLLECTION_ANSWER,
    JSON_DOCUMENT_ANSWER,
    JSON_EXTRACTION,
    JSON_NEWS_DESCRIPTION,
    MALFORMED_PROBLEM,
    TEXT_ANSWER_PROBLEM,
)

NEW, CHANGED, REMOVED, ITEM = "new", "changed", "removed", "item"


def _schema(kind: MemoryKind) -> dict[str, Any]:
    return kind.schema.model_json_schema()


def _nullable(field: dict[str, Any]) -> dict[str, Any]:
    """A field's schema that also takes null (a list stays a list: empty means nothing new)."""
    if field.get("type") == "array" or any(option.get("type") == "null" for option in field.get("anyOf", [])):
        return field
    return {"anyOf": [field, {"type": "null"}], "description": field.get("description", "")}


def _numbers(count: int) -> list[str]:
    return [str(number) for number in range(1, count + 1)]


def news_parameters(kind: MemoryKind, existing_count: int) -> dict[str, Any]:
    """The JSON schema of a kind's news (see the module's docstring); `existing_count` documents are numbered."""
    schema = _schema(kind)
    properties: dict[str, Any] = schema.get("properties", {})
    definitions = {"$defs": schema["$defs"]} if "$defs" in schema else {}
    if not kind.collection:
        return {
            "type": "object",
            "properties": {name: _nullable(field) for name, field in properties.items()},
            "required": list(properties),
            **definitions,
        }
    parts: dict[str, Any] = {}
    if kind.inserts:
        new = {name: field for name, field in properties.items() if name != kind.status_field}
        required = [name for name in schema.get("required", []) if name in new]
        parts[NEW] = {"type": "array", "items": {"type": "object", "properties": new, "required": required}}
    if kind.patches and existing_count:
        changed = {ITEM: {"enum": _numbers(existing_count)}, **{name: _nullable(f) for name, f in properties.items()}}
        parts[CHANGED] = {"type": "array", "items": {"type": "object", "properties": changed, "required": [ITEM]}}
    if kind.deletes and existing_count:
        parts[REMOVED] = {"type": "array", "items": {"enum": _numbers(existing_count)}}
    return {"type": "object", "properties": parts, "required": list(parts), **definitions}


def news_tool(kind: MemoryKind, existing_count: int) -> dict[str, Any]:
    """The forced tool whose arguments are the kind's news, named after the kind's schema."""
    return {
        "type": "function",
        "function": {
            "name": kind.schema.__name__,
            "description": JSON_NEWS_DESCRIPTION.format(memory=kind.title),
            "parameters": news_parameters(kind, existing_count),
        },
    }


def news_prompt(kind: MemoryKind, prompt: Sequence[AnyMessage], documents: Sequence[dict[str, Any]]) -> list[AnyMessage]:
    """The extraction prompt with what the answer holds added to its instruction: the kind's fields and its
    current document, or its numbered documents."""
    fields = "\n".join(f"- {name}: {field.get('description', name)}" for name, field in _schema(kind)["properties"].items())
    if kind.collection:
        numbered = "\n".join(f"{number}. {json.dumps(document, ensure_ascii=False)}" for number, document in enumerate(documents, 1))
        answer = JSON_COLLECTION_ANSWER.format(memory=kind.title, documents=numbered or "(none)")
    else:
        current = json.dumps(documents[0], ensure_ascii=False) if documents else "(none)"
        answer = JSON_DOCUMENT_ANSWER.format(memory=kind.title, document=current)
    instruction = JSON_EXTRACTION.format(memory=kind.title, fields=fields, answer=answer)
    first, *rest = prompt
    return [SystemMessage(content=f"{first.text}\n\n{instruction}"), *rest]


def valid_document(kind: MemoryKind, document: Mapping[str, Any], fallback: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document as the kind's schema stores it, a field that does not fit put back to its `fallback` value
    (left out when it has none); None when it still does not fit (a required field is missing)."""
    candidate = dict(document)
    for _ in range(2):
        try:
            return kind.schema.model_validate(candidate).model_dump(mode="json")
        except ValidationError as error:
            for name in {str(problem["loc"][0]) for problem in error.errors() if problem["loc"]}:
                candidate.pop(name, None)
                if name in fallback:
                    candidate[name] = fallback[name]
    return None


def grounded_fields(kind: MemoryKind, fields: Mapping[str, Any], words: UserWords) -> dict[str, Any]:
    """The fields with a value, each text field (not a suggested one) only as far as the user said it, and each
    list holding an item once (SmolLM2 gave one ToDo the solution "buy groceries" three times)."""
    checked = set(kind.text_fields) - set(kind.suggested_fields)
    kept = {}
    for name, value in fields.items():
        value = grounded_value(value, words) if name in checked else value
        if isinstance(value, list):
            value = [item for index, item in enumerate(value) if not any(same_document(item, v) for v in value[:index])]
        if value is not None and value != []:
            kept[name] = value
    return kept


def merged(before: Mapping[str, Any], news: Mapping[str, Any]) -> dict[str, Any]:
    """A document with news applied: a value replaces the old one, a list's new items join the old ones."""
    after = dict(before)
    for name, value in news.items():
        old = before.get(name)
        if isinstance(value, list) and isinstance(old, list):
            after[name] = old + [item for item in value if not any(same_document(item, known) for known in old)]
        else:
            after[name] = value
    return after


_WORD = re.compile(r"\w+")


def _summary(kind: MemoryKind, document: Mapping[str, Any]) -> str:
    """A document's summary field as documents are told apart: its words alone, case folded ("Book swim lessons."
    and "book  swim lessons" are one ToDo)."""
    return " ".join(_WORD.findall(str(document.get(kind.summary_field, "")).casefold()))


def _doubles(kind: MemoryKind, document: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> bool:
    """Whether `document` would be one of `others` twice: the same summary (`_summary`), or, without one, the same
    content."""
    summary = _summary(kind, document)
    return any(_summary(kind, other) == summary if summary else same_document(document, other) for other in others)


def names_document(kind: MemoryKind, document: Mapping[str, Any], words: UserWords) -> bool:
    """Whether the user's words name a document: they say its summary field."""
    summary = document.get(kind.summary_field)
    return isinstance(summary, str) and words.grounds(summary)


def document_changes(
    kind: MemoryKind, answer: Mapping[str, Any], existing: Mapping[str, dict], new_key: Callable[[int], str], words: UserWords
) -> list[MemoryChange]:
    """The change a single document's news makes (none when nothing the user said is new)."""
    key, before = next(iter(existing.items()), (new_key(0), None))
    news = grounded_fields(kind, answer, words)
    after = valid_document(kind, merged(before or {}, news), before or {}) if news else None
    if after is None or after == before:
        return []
    return [MemoryChange("updated" if before else "created", key, before, after)]


def collection_changes(
    kind: MemoryKind,
    answer: Mapping[str, Any],
    numbered: Sequence[tuple[str, dict]],
    new_key: Callable[[int], str],
    words: UserWords,
    named: UserWords,
) -> list[MemoryChange]:
    """The changes a collection's news makes: new documents created, numbered ones changed or removed, each value as
    far as `words` (the user's in the conversation) say it, and a document changed or removed only when `named`
    (the user's latest message) names it."""
    changes: list[MemoryChange] = []
    # Every document as it stands with the changes so far, a created one under its new key.
    documents = dict(numbered)
    created = 0
    for fields in answer.get(NEW, []):
        document = valid_document(kind, grounded_fields(kind, fields, words), {})
        if document is None or _doubles(kind, document, documents.values()):
            continue
        key = new_key(created)
        created += 1
        changes.append(MemoryChange("created", key, None, document))
        documents[key] = document
    touched: set[str] = set()
    for fields in answer.get(CHANGED, []):
        key, before = numbered[int(fields[ITEM]) - 1]
        news = grounded_fields(kind, {name: value for name, value in fields.items() if name != ITEM}, words)
        after = valid_document(kind, merged(before, news), before)
        if key in touched or after is None or after == before or not names_document(kind, before, named):
            continue
        if _doubles(kind, after, (document for other, document in documents.items() if other != key)):
            continue
        touched.add(key)
        documents[key] = after
        changes.append(MemoryChange("updated", key, before, after))
    for number in answer.get(REMOVED, []):
        key, before = numbered[int(number) - 1]
        if key not in touched and names_document(kind, before, named):
            touched.add(key)
            changes.append(MemoryChange("deleted", key, before, None))
    return changes


def json_changes(
    model: BaseChatModel,
    kind: MemoryKind,
    prompt: list[AnyMessage],
    existing: Mapping[str, dict[str, Any]],
    new_key: Callable[[int], str],
    config: RunnableConfig,
    words: UserWords,
    named: UserWords,
) -> list[MemoryChange]:
    """The changes the model's JSON news make to the `existing` documents of `kind` (see the module's docstring),
    kept as far as `words`, the user's in the conversation, say them; a collection's documents are changed or
    removed only when `named`, the user's latest message, names them.

    Raises `UnusableOutputError` when the model answered in text or with JSON that does not fit the schema.
    """
    numbered = list(existing.items())
    tool = news_tool(kind, len(numbered))
    request = news_prompt(kind, prompt, [document for _, document in numbered])
    with model_errors():
        message = quiet(model).bind_tools([tool], tool_choice=tool["function"]["name"]).invoke(request, config)
    if message.invalid_tool_calls:
        raise UnusableOutputError(MALFORMED_PROBLEM)
    if not message.tool_calls:
        raise UnusableOutputError(TEXT_ANSWER_PROBLEM)
    answer = message.tool_calls[0]["args"]
    if kind.collection:
        return collection_changes(kind, answer, numbered, new_key, words, named)
    return document_changes(kind, answer, existing, new_key, words)

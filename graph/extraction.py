"""What the update nodes share: the conversation they extract from, stable keys, and atomic writes."""

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    merge_message_runs,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph._internal._constants import CONFIG_KEY_DURABILITY
from langgraph.constants import TAG_NOSTREAM
from langgraph.errors import GraphRecursionError
from langgraph.store.base import BaseStore
from pydantic import BaseModel
from trustcall import create_extractor

from graph.history import ChangeContext, MemoryChange, record_changes
from graph.input_limits import bound_message
from graph.model import EndpointCircuit, model_errors
from graph.redaction import redact, redact_text
from graph.state import State
from graph.tool_calls import last_ai_message, last_human_message
from prompts import SUMMARY_BLOCK

SEE_ABOVE = "Handled together with the previous UpdateMemory call."
SECRETS_NOT_SAVED = (
    "\nNot saved: {secrets}. Secrets are never kept in memory; tell the user so, without repeating them."
)
# trustcall retries unusable model output in a loop; this bounds it (a normal extraction takes < 12 steps).
EXTRACTION_STEP_LIMIT = 16
EXTRACTION_FAILED = (
    "The {memory} update failed: the model's output could not be used after several attempts, "
    "so nothing was changed."
)
EXTRACTOR_CACHE_SIZE = 32
_extractors: OrderedDict[tuple[int, str], tuple[BaseChatModel, Runnable]] = OrderedDict()
_extractors_lock = threading.Lock()
KEY_NAMESPACE = uuid.UUID("5b1d3c52-8f43-4a53-9f5e-0c6f1d1f6a10")


def quiet(model: BaseChatModel) -> BaseChatModel:
    """A copy of the model whose tokens are not streamed to the user (extraction calls are internal)."""
    return model.model_copy(update={"tags": [*(model.tags or []), TAG_NOSTREAM]})


def cached_extractor(model: BaseChatModel, schema: type[BaseModel], **options: bool) -> Runnable:
    """trustcall's extractor for one model and schema, built once: building it converts every tool schema.

    `options` (enable_inserts, enable_deletes) must be the same for every call with the same schema.
    """
    key = (id(model), schema.__name__)
    with _extractors_lock:
        cached = _extractors.get(key)
        if cached and cached[0] is model:
            _extractors.move_to_end(key)
            return cached[1]
    extractor = create_extractor(quiet(model), tools=[schema], tool_choice=schema.__name__, **options)
    with _extractors_lock:
        _extractors[key] = (model, extractor)
        while len(_extractors) > EXTRACTOR_CACHE_SIZE:
            _extractors.popitem(last=False)
    return extractor


def conversation(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user-visible conversation before the latest assistant message, without tool-call plumbing."""
    routing = last_ai_message(messages)
    end = messages.index(routing) if routing is not None else len(messages)
    visible: list[AnyMessage] = []
    for message in messages[:end]:
        if isinstance(message, HumanMessage):
            visible.append(bound_message(message))
        elif isinstance(message, AIMessage) and message.text:
            visible.append(AIMessage(content=message.text, id=message.id))
    return visible


def with_summary(prompt: str, summary: str) -> str:
    """A system prompt followed by the thread's summary, when there is one."""
    return prompt + ("\n\n" + SUMMARY_BLOCK.format(summary=summary) if summary else "")


def extraction_messages(instruction: str, messages: Sequence[AnyMessage], summary: str = "") -> list[AnyMessage]:
    """The instruction (with the thread's summary) and the conversation, same-role runs merged."""
    system = with_summary(instruction, summary)
    return list(merge_message_runs([SystemMessage(content=system), *conversation(messages)]))


def run_extractor(extractor: Runnable, inputs: dict, config: RunnableConfig) -> dict | None:
    """Run a trustcall extractor with bounded retries; None when the model never produced usable output.

    Raises `ModelUnavailableError` when the endpoint was down, overloaded or too slow.
    """
    circuit = EndpointCircuit()
    # trustcall's graph has no checkpointer, and LangGraph's "sync" durability (which build_graph sets and
    # subgraphs inherit) fails on such a graph; durability means nothing there anyway.
    run_config = merge_configs(
        config,
        {
            "recursion_limit": EXTRACTION_STEP_LIMIT,
            "callbacks": [circuit],
            "configurable": {CONFIG_KEY_DURABILITY: "async"},
        },
    )
    with model_errors():
        try:
            result = extractor.invoke(inputs, run_config)
        except GraphRecursionError:
            result = None
        if circuit.failure is not None:
            raise circuit.failure
    return result


def routing_seed(messages: Sequence[AnyMessage], call_id: str) -> str:
    """Identifies a routed tool call across replays: the routing message's id and the call's id."""
    routing = last_ai_message(messages)
    return f"{routing.id if routing else ''}/{call_id}"


def new_document_key(messages: Sequence[AnyMessage], call_id: str, index: int) -> str:
    """A key for the index-th new document of a routed tool call, the same each time the call is replayed."""
    return str(uuid.uuid5(KEY_NAMESPACE, f"{routing_seed(messages, call_id)}/{index}"))


def changes_from_extraction(
    result: Mapping[str, Any] | None,
    existing: Mapping[str, dict[str, Any]],
    new_key: Callable[[int], str],
) -> list[MemoryChange]:
    """Turn trustcall's responses into changes: RemoveDoc deletes, patched ids update, the rest create."""
    changes: list[MemoryChange] = []
    created = 0
    if result is None:
        return changes
    for response, meta in zip(result["responses"], result["response_metadata"]):
        if type(response).__name__ == "RemoveDoc":
            key = response.json_doc_id
            if key in existing:
                changes.append(MemoryChange("deleted", key, existing[key], None))
            continue
        document = response.model_dump(mode="json")
        key = meta.get("json_doc_id")
        if key is None:
            changes.append(MemoryChange("created", new_key(created), None, document))
            created += 1
        elif key in existing and existing[key] != document:
            changes.append(MemoryChange("updated", key, existing[key], document))
    return changes


def change_context(state: State, config: RunnableConfig, calls: Sequence[dict]) -> ChangeContext:
    """The thread, the user's (redacted) message and a replay-stable seed for the history of this update."""
    latest_user = last_human_message(state["messages"])
    return ChangeContext(
        thread_id=str(config.get("configurable", {}).get("thread_id", "")),
        message=redact_text(latest_user.text)[0] if latest_user else "",
        seed=routing_seed(state["messages"], calls[0]["id"] if calls else ""),
    )


def redact_changes(changes: Sequence[MemoryChange]) -> tuple[list[MemoryChange], set[str]]:
    """The changes with secrets redacted from the new documents (dropping any that become no-ops), and what was found."""
    redacted: list[MemoryChange] = []
    found: set[str] = set()
    for change in changes:
        after, secrets = redact(change.after)
        found |= secrets
        if after != change.before:
            redacted.append(replace(change, after=after))
    return redacted, found


def commit_changes(
    store: BaseStore, user_id: str, kind: str, changes: Sequence[MemoryChange], context: ChangeContext
) -> tuple[list[MemoryChange], set[str]]:
    """Redact secrets, then write the changes with their history (see `record_changes`).

    Returns the changes as saved and the kinds of secret left out.
    """
    saved, secrets = redact_changes(changes)
    if saved:
        record_changes(store, user_id, kind, saved, context)
    return saved, secrets


def answer_update_calls(
    calls: Sequence[dict], report: str, kind: str, changes: Sequence[MemoryChange], secrets: set[str]
) -> dict:
    """The node's state update: the report answers the first call (with the changes as artifact), the rest point to it."""
    if secrets:
        report += SECRETS_NOT_SAVED.format(secrets=", ".join(sorted(secrets)))
    artifact = {"kind": kind, "changes": [asdict(change) for change in changes], "secrets": sorted(secrets)}
    return {
        "messages": [
            ToolMessage(content=report, tool_call_id=calls[0]["id"], artifact=artifact),
            *(ToolMessage(content=SEE_ABOVE, tool_call_id=call["id"]) for call in calls[1:]),
        ]
    }

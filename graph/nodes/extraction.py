"""trustcall extraction, shared by the profile and ToDo nodes: prompt, bounded run, stable keys, changes."""

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, SystemMessage, merge_message_runs
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel
from trustcall import create_extractor

from graph.backends.model import EndpointCircuit, model_errors, quiet
from graph.durability import durability_config
from graph.memory.changes import MemoryChange
from graph.thread.summary import with_summary
from graph.thread.tokens import bound_message
from graph.thread.tool_calls import last_ai_message, transcript

# trustcall retries unusable model output in a loop; this bounds it (a normal extraction takes < 12 steps).
EXTRACTION_STEP_LIMIT = 16
EXTRACTOR_CACHE_SIZE = 32
KEY_NAMESPACE = uuid.UUID("5b1d3c52-8f43-4a53-9f5e-0c6f1d1f6a10")
_extractors: OrderedDict[tuple[int, str], tuple[BaseChatModel, Runnable]] = OrderedDict()
_extractors_lock = threading.Lock()


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
    return [bound_message(message) for message in transcript(messages[:end])]


def extraction_messages(instruction: str, messages: Sequence[AnyMessage], summary: str = "") -> list[AnyMessage]:
    """The instruction (with the thread's summary) and the conversation, same-role runs merged."""
    system = with_summary(instruction, summary)
    return list(merge_message_runs([SystemMessage(content=system), *conversation(messages)]))


def run_extractor(extractor: Runnable, inputs: dict, config: RunnableConfig) -> dict | None:
    """Run a trustcall extractor with bounded retries; None when the model never produced usable output.

    Raises `ModelUnavailableError` when the endpoint was down, overloaded or too slow.
    """
    circuit = EndpointCircuit()
    # trustcall's graph has no checkpointer: the agent's "sync" durability, which subgraphs inherit, fails on
    # such a graph (and means nothing there), so its runs go back to LangGraph's default.
    run_config = merge_configs(
        config,
        {"recursion_limit": EXTRACTION_STEP_LIMIT, "callbacks": [circuit]},
        durability_config("async"),
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
    result: Mapping[str, Any], existing: Mapping[str, dict[str, Any]], new_key: Callable[[int], str]
) -> list[MemoryChange]:
    """Turn trustcall's responses into changes: RemoveDoc deletes, patched ids update, the rest create."""
    changes: list[MemoryChange] = []
    created = 0
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


def extract_changes(
    model: BaseChatModel,
    schema: type[BaseModel],
    prompt: list[AnyMessage],
    existing: Mapping[str, dict[str, Any]],
    new_key: Callable[[int], str],
    config: RunnableConfig,
    **options: bool,
) -> list[MemoryChange] | None:
    """Let trustcall patch, insert or (with `options`) delete documents of `schema`; None when extraction failed
    (trustcall ran out of attempts, or some of the model's calls never validated)."""
    extractor = cached_extractor(model, schema, **options)
    documents = [(key, schema.__name__, value) for key, value in existing.items()] or None
    result = run_extractor(extractor, {"messages": prompt, "existing": documents}, config)
    if result is None or len(result["responses"]) < sum(len(message.tool_calls) for message in result["messages"]):
        return None  # trustcall gave up, or dropped calls that never validated: not "nothing to change"
    return changes_from_extraction(result, existing, new_key)

"""trustcall extraction, shared by the profile and ToDo nodes: prompt, bounded run, stable keys, changes."""

import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, merge_message_runs
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import merge_configs
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel
from trustcall import create_extractor

from graph.backends.model import EndpointCircuit, model_errors, quiet
from graph.durability import durability_config
from graph.memory.changes import MemoryChange, same_document
from graph.nodes.summary import with_summary
from graph.nodes.window import PromptParts, fitted
from graph.recent import Recent
from graph.thread.cut_replies import as_prompted
from graph.thread.reply_last import routing_id, routing_start
from graph.thread.tokens import bound_message
from graph.thread.tool_calls import last_ai_message, transcript
from prompts import DROPPED_PATCH_PROBLEM, GAVE_UP_PROBLEM, INVALID_PROBLEM, MALFORMED_PROBLEM, TEXT_ANSWER_PROBLEM

# trustcall retries unusable model output in a loop; this bounds it (a normal extraction takes < 12 steps).
EXTRACTION_STEP_LIMIT = 16
KEY_NAMESPACE = uuid.UUID("5b1d3c52-8f43-4a53-9f5e-0c6f1d1f6a10")
# The extractors a graph keeps (`graph.runtime.GraphRuntime.extractors`), by model object, schema and options.
Extractors = Recent[tuple, tuple[BaseChatModel, Runnable]]


class UnusableOutputError(Exception):
    """The model's output for a memory update could not be used as asked; `problem` says why, in a few words."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def cached_extractor(extractors: Extractors, model: BaseChatModel, schema: type[BaseModel], **options: bool) -> Runnable:
    """trustcall's extractor for one model, schema and set of `options` (enable_inserts, enable_updates,
    enable_deletes), built once and kept in `extractors`: building it converts every tool schema."""
    key = (id(model), schema, tuple(sorted(options.items())))
    cached = extractors.get(key)
    if cached and cached[0] is model:
        return cached[1]
    extractor = create_extractor(quiet(model), tools=[schema], tool_choice=schema.__name__, **options)
    extractors.put(key, (model, extractor))
    return extractor


def conversation(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The user-visible conversation before the latest assistant message (and the reply given first beside it),
    without tool-call plumbing (a reply cut at the token limit carried as cut)."""
    routing = last_ai_message(messages)
    end = routing_start(messages, messages.index(routing)) if routing is not None else len(messages)
    return as_prompted([bound_message(message) for message in transcript(messages[:end])])


def extraction_messages(
    instruction: str, messages: Sequence[AnyMessage], summary: str = "", budget: int | None = None
) -> list[AnyMessage]:
    """The instruction (with the thread's summary) and the conversation, same-role runs merged; within `budget`
    estimated tokens when given (`graph.nodes.window`)."""
    said = list(merge_message_runs(conversation(messages)))
    parts = PromptParts.of(lambda kept: [SystemMessage(content=with_summary(instruction, kept))], summary, said)
    return list(merge_message_runs(fitted(parts, budget)))


class FirstAnswer(BaseCallbackHandler):
    """Keeps the model's first answer in an extraction: the one its forced `tool_choice` asked for.

    trustcall reports what it could use, not what the model sent; this tells a model that answered in text
    (Ollama and other servers ignore `tool_choice`) from one that asked for no change.
    """

    def __init__(self) -> None:
        self.message: AIMessage | None = None
        self._lock = threading.Lock()

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Keep the message of the extraction's first model answer."""
        generation = response.generations[0][0] if response.generations and response.generations[0] else None
        with self._lock:
            if self.message is None and isinstance(generation, ChatGeneration):
                self.message = generation.message


def run_extractor(extractor: Runnable, inputs: dict, config: RunnableConfig) -> tuple[dict | None, AIMessage | None]:
    """Run a trustcall extractor with bounded retries: its result (None when the model never produced usable
    output) and the model's first answer.

    Raises `ModelUnavailableError` when the endpoint was down, overloaded or too slow.
    """
    circuit, first = EndpointCircuit(), FirstAnswer()
    # trustcall's graph has no checkpointer: the agent's "sync" durability, which subgraphs inherit, fails on
    # such a graph (and means nothing there), so its runs go back to LangGraph's default. The step limit is set
    # last: merge_configs fills each config from the running one, so a server's own recursion limit (langgraph-api
    # runs with 10,000) would replace it, and trustcall's retry loop, which catches every model error, would never end.
    merged = merge_configs(config, {"callbacks": [circuit, first]}, durability_config("async"))
    run_config: RunnableConfig = {**merged, "recursion_limit": EXTRACTION_STEP_LIMIT}
    with model_errors():
        try:
            result = extractor.invoke(inputs, run_config)
        except GraphRecursionError:
            result = None
        if circuit.failure is not None:
            raise circuit.failure
    return result, first.message


def _asks_for_change(call: dict) -> bool:
    """Whether a call of the model's first answer asks for a change: anything but a PatchDoc without patches."""
    return call["name"] != "PatchDoc" or bool(call["args"].get("patches"))


def shortfall(result: Mapping[str, Any] | None, first: AIMessage | None) -> str | None:
    """Why an extraction saved less than the model was asked, or None when it did not: trustcall gave up; the
    model answered in text (under a forced `tool_choice` a text answer is not "nothing to change"; a PatchDoc
    without patches is); a call was malformed; a call never validated; or a patch was dropped (its document
    unknown, or the patch inapplicable)."""
    if result is None or first is None:
        return GAVE_UP_PROBLEM
    if first.invalid_tool_calls:
        return MALFORMED_PROBLEM
    if not first.tool_calls:
        return TEXT_ANSWER_PROBLEM
    if len(result["responses"]) < sum(len(message.tool_calls) for message in result["messages"]):
        return INVALID_PROBLEM
    kept = {call["id"] for message in result["messages"] for call in message.tool_calls}
    if any(call["id"] not in kept for call in first.tool_calls if _asks_for_change(call)):
        return DROPPED_PATCH_PROBLEM
    return None


def routing_seed(messages: Sequence[AnyMessage], call_id: str) -> str:
    """Identifies a routed tool call across replays: the routing message's id (`routing_id`) and the call's id."""
    routing = last_ai_message(messages)
    return f"{routing_id(routing) if routing else ''}/{call_id}"


def new_document_key(messages: Sequence[AnyMessage], call_id: str, index: int) -> str:
    """A key for the index-th new document of a routed tool call, the same each time the call is replayed."""
    return str(uuid.uuid5(KEY_NAMESPACE, f"{routing_seed(messages, call_id)}/{index}"))


def changes_from_extraction(
    result: Mapping[str, Any], existing: Mapping[str, dict[str, Any]], new_key: Callable[[int], str]
) -> list[MemoryChange]:
    """Turn trustcall's responses into changes: RemoveDoc deletes, patched ids update, the rest create.

    Nothing doubles: a new document with the same content as an existing one or another new one
    (`same_document`) is left out, and a change the same as an earlier one (a call repeated) is made once.
    """
    changes: list[MemoryChange] = []
    created: list[dict[str, Any]] = []
    for response, meta in zip(result["responses"], result["response_metadata"]):
        if type(response).__name__ == "RemoveDoc":
            key = response.json_doc_id
            if key not in existing:
                continue
            change = MemoryChange("deleted", key, existing[key], None)
        elif (key := meta.get("json_doc_id")) is None:
            document = response.model_dump(mode="json")
            if any(same_document(document, other) for other in [*existing.values(), *created]):
                continue
            change = MemoryChange("created", new_key(len(created)), None, document)
            created.append(document)
        else:
            document = response.model_dump(mode="json")
            if key not in existing or existing[key] == document:
                continue
            change = MemoryChange("updated", key, existing[key], document)
        if change not in changes:
            changes.append(change)
    return changes


def extract_changes(
    extractors: Extractors,
    model: BaseChatModel,
    schema: type[BaseModel],
    prompt: list[AnyMessage],
    existing: Mapping[str, dict[str, Any]],
    new_key: Callable[[int], str],
    config: RunnableConfig,
    **options: bool,
) -> list[MemoryChange]:
    """Let trustcall patch, insert or (with `options`) delete documents of `schema`, with the extractor kept in
    `extractors`.

    Raises `UnusableOutputError` when the extraction would save less than the model was asked (`shortfall`).
    """
    extractor = cached_extractor(extractors, model, schema, **options)
    documents = [(key, schema.__name__, value) for key, value in existing.items()] or None
    result, first = run_extractor(extractor, {"messages": prompt, "existing": documents}, config)
    if problem := shortfall(result, first):
        raise UnusableOutputError(problem)
    return changes_from_extraction(result, existing, new_key)

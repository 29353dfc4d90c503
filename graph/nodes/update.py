"""The recipe every update node follows: propose changes, commit them with their history, answer the calls.

A memory kind's node supplies two functions (`graph.nodes.update_kinds` picks them for each kind): `propose`
(the changes the memory needs, from the conversation; it raises `UnusableOutputError` when the model's output
cannot be used as asked) and `report` (what to tell the chat model about the changes saved). Everything else
is the same for every kind: the pending `UpdateMemory` calls of its update type it answers, secret
redaction, one batch for the changes and their history, and the tool answers.

An update that saves less than it was asked is a failed update: its answer has status "error" and says why,
its `memory_update` event is `failed`, and the chat node's follow-up reply tells the user (`must_tell_user`).
A proposer that will not save what it was asked (a text over its kind's limit, a change held for the user to
confirm) raises `NotSaved`, whose problem the user's note names.

Each update happens once and overwrites nobody (`graph.memory.changes`). A replayed update (the process
died after its commit, before the checkpoint recorded it) finds its changes in the history under its
replay-stable seed and answers the calls from them, without asking the model or writing again (it looks
only when the calls may be a replay: they come from another process or a resumed turn; an update run again
in the process that routed it is still caught by its commit, which refuses entries that exist). An update
whose documents another writer changed since they were read writes nothing; it reads the memories afresh
and proposes once more, and if that conflicts too, its answer says so.

An update that fails for any of these reasons is not lost: it is kept as a pending change
(`graph.memory.pending`) that the user can see, retry (`graph.nodes.pending_retry`) or drop.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, PutOp

from graph.backends.context_window import model_window
from graph.backends.json_calls import JsonCallModel
from graph.backends.model import ChatModelFactory
from graph.memory.changes import ChangeContext, MemoryChange, change_source, commit_changes, committed_changes
from graph.memory.conditions import ConflictError, Unchanged
from graph.memory.grounding import UserWords
from graph.memory.kinds import MemoryKind
from graph.memory.notes import change_notes
from graph.memory.pending import PendingChange, keep_pending, pending_by_id, pending_id, settle_op
from graph.memory.provenance import now_iso
from graph.memory.redaction import redact_text
from graph.memory.replaced import event_changes
from graph.memory.text_diff import document_diff
from graph.nodes.extraction import (
    UnusableOutputError,
    extract_changes,
    extraction_messages,
    new_document_key,
    routing_seed,
)
from graph.nodes.json_extraction import json_changes
from graph.recent import Recent
from graph.run_context import ResolvedRun, RunContext
from graph.runtime import GraphRuntime
from graph.state import State
from graph.thread.reply_last import routing_id
from graph.thread.tokens import bound_message
from graph.thread.tool_calls import last_ai_message, pending_update_calls, through_latest_calls
from prompts import CONFLICT_PROBLEM, EXTRACTION_FAILED, SECRETS_NOT_SAVED, SEE_ABOVE, UPDATE_CONFLICT

# The key of the custom stream event each update node sends with its outcome.
MEMORY_UPDATE_EVENT = "memory_update"
# An extraction prompt's conversation takes at most 1/EXTRACTION_SHARE of the prompt's room in the context window:
# trustcall adds the memories and the schemas, and the JSON mode the numbered documents.
EXTRACTION_SHARE = 2
# How often an update whose documents changed under it reads them again and proposes anew.
CONFLICT_RETRIES = 1


class NotSaved(Exception):
    """The update will not save what it was asked to: `answer` tells the model why and what to tell the user,
    `problem` tells the user in a few words (their note), and `proposal`, when given, is a change held until the
    user confirms it (`graph.nodes.update_text`), kept in the answer's artifact. `pending`: whether the update is
    kept as a pending change (never one held for confirmation, which waits for its code in the chat)."""

    def __init__(self, answer: str, problem: str, proposal: dict[str, Any] | None = None, *, pending: bool = True) -> None:
        super().__init__(problem)
        self.answer = answer
        self.problem = problem
        self.proposal = proposal
        self.pending = pending and proposal is None


def routed_here(routed: Recent[str, None], message: AIMessage) -> None:
    """Note in `routed` (the graph's `GraphRuntime.routed`) that its chat node made the routing `message`, so its
    updates run here for the first time."""
    if message.id and message.tool_calls:
        routed.put(message.id, None)


@dataclass(frozen=True)
class UpdateRequest:
    """What an update node works from: the run, its settings and ids, its model, its memory kind, the graph's
    runtime (its kinds and caches), and the calls it answers.

    `fresh` asks `propose` to read the memories from the store again rather than use the turn's read
    (after another writer changed them under the update).
    """

    state: State
    config: RunnableConfig
    store: BaseStore
    run: ResolvedRun
    model: BaseChatModel
    kind: MemoryKind
    graph_runtime: GraphRuntime
    calls: list[dict]
    fresh: bool = False

    @property
    def context(self) -> RunContext:
        """The run's context."""
        return self.run.context

    @property
    def kinds(self) -> tuple[MemoryKind, ...]:
        """The graph's memory kinds."""
        return self.graph_runtime.kinds

    @property
    def user_id(self) -> str:
        """The user whose memory is updated."""
        return self.run.user_id

    @cached_property
    def messages(self) -> Sequence[AnyMessage]:
        """The thread up to the calls being answered (not what the user wrote after a turn cut short)."""
        return through_latest_calls(self.state["messages"])

    @property
    def may_be_replay(self) -> bool:
        """Whether the calls may have been run before: another process routed them, or the turn was resumed."""
        routing = last_ai_message(self.messages)
        first_run_here = routing is not None and routing_id(routing) in self.graph_runtime.routed
        resumed_id = (self.state.get("resumed_calls") or ("", 0))[0]
        return not first_run_here or resumed_id == (routing.id if routing else None)

    @property
    def extraction_options(self) -> dict[str, bool]:
        """What trustcall may do to the kind's documents: insert, patch, delete."""
        return extraction_options(self.kind)

    def new_key(self, index: int) -> str:
        """The key of the index-th new document, derived from the routing call: the same on a replay."""
        return new_document_key(self.messages, self.calls[0]["id"], index)

    def prompt(self, instruction: str) -> list[AnyMessage]:
        """The extraction prompt: the instruction, the thread's summary and the visible conversation, within a share of
        the model's context window (the rest is for the memories, the schemas and the answer)."""
        window = model_window(self.model)
        budget = window.prompt_tokens // EXTRACTION_SHARE if window else None
        return extraction_messages(instruction, self.messages, self.state.get("summary", ""), budget)

    @property
    def answers_in_json(self) -> bool:
        """Whether the model answers in schema-constrained JSON (MAISTRO_CALL_MODE): then what it extracts is kept
        only as far as the user said it (`graph.memory.grounding`)."""
        return isinstance(self.model, JsonCallModel)

    @cached_property
    def user_said(self) -> list[str]:
        """The user's messages in the conversation being answered, oldest first."""
        return [message.text for message in self.messages if isinstance(message, HumanMessage)]

    def user_words(self, *also: str) -> UserWords:
        """The words of the user's messages in the conversation being answered, and of `also`."""
        return UserWords.of([*self.user_said, *also])

    def extract(self, instruction: str, existing: Mapping[str, dict[str, Any]], new_key: Callable[[int], str]) -> list[MemoryChange]:
        """The changes the model proposes to the kind's `existing` documents, new ones keyed by `new_key`: trustcall's
        patches and calls, or, from a model that answers in JSON, the kind's news (`graph.nodes.json_extraction`).

        Raises `UnusableOutputError` when the model's output cannot be used as asked.
        """
        prompt = self.prompt(instruction)
        if self.answers_in_json:
            latest = UserWords.of([self.user_said[-1]] if self.user_said else [])
            return json_changes(self.model, self.kind, prompt, existing, new_key, self.config, self.user_words(), latest)
        return extract_changes(
            self.graph_runtime.extractors, self.model, self.kind.schema, prompt, existing, new_key, self.config, **self.extraction_options
        )


def extraction_options(kind: MemoryKind) -> dict[str, bool]:
    """What trustcall may do to a kind's documents (its extractor's options): insert, patch, delete."""
    return {"enable_inserts": kind.inserts, "enable_updates": kind.patches, "enable_deletes": kind.deletes}


Propose = Callable[[UpdateRequest], list[MemoryChange]]
Report = Callable[[UpdateRequest, list[MemoryChange]], str]


def change_context(request: UpdateRequest) -> ChangeContext:
    """The thread, the user's message and a replay-stable seed for the history of this update, and for the changes'
    sources the message's id, when it was said (`said_at`) and the run's model.

    The message is cut to what a prompt shows (`bound_message`) and redacted with the user's earlier
    messages as context, so a secret split across messages ("my wifi password is" … "hunter2") is not kept.
    """
    said = request.user_said
    message = ""
    if said:
        latest = said[-1]
        earlier = "\n".join(said[-3:-1])[-2000:]  # the end of the two messages before, where a split secret starts
        limit = len(bound_message(HumanMessage(latest)).content)
        message = redact_text(latest, context=earlier, limit=limit)[0]
    human = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
    return ChangeContext(
        thread_id=request.run.thread_id,
        message=message,
        seed=routing_seed(request.messages, request.calls[0]["id"] if request.calls else ""),
        message_id=(human.id or "") if human else "",
        said_at=said_at(request.context),
        model=request.context.model,
    )


def said_at(context: RunContext) -> str:
    """When the user said what the update saves, ISO 8601 in UTC: the run's `message_time` when the client sent one,
    else now (the update runs within the turn of the message)."""
    if context.message_time:
        return datetime.fromisoformat(context.message_time).astimezone(timezone.utc).isoformat()
    return now_iso()


def saved_sources(context: ChangeContext, kind: MemoryKind, saved: Sequence[MemoryChange]) -> list[dict[str, str]]:
    """The sources of the changes saved under `context`, in order, as their history entries record them."""
    return [change_source(context, kind, order) for order in range(len(saved))]


def answer_update_calls(
    calls: Sequence[dict],
    report: str,
    kind: MemoryKind,
    changes: Sequence[MemoryChange],
    secrets: set[str],
    *,
    failed: bool = False,
    refusal: NotSaved | None = None,
    sources: Sequence[dict[str, str]] = (),
    pending: str | None = None,
) -> dict:
    """The node's state update: the report answers the first call (with the changes as artifact; status "error"
    when the update `failed`, or was refused: `refusal`'s problem and proposal go in the artifact too, and the id
    of the `pending` change it left), the rest point to it.

    Runs streamed with `stream_mode="custom"` get the outcome at once (`send_outcome`), with the notes people
    read (e.g. "ToDo added: Book swim lessons"), when changes were saved their `sources` (one per change, as
    `graph.memory.provenance` keeps them: change id, thread, message id, quote, time, model) and, for a free-text
    kind, the change in full.
    """
    failed = failed or refusal is not None
    if secrets:
        report += SECRETS_NOT_SAVED.format(secrets=", ".join(sorted(secrets)))
    # A collection's reply names its items, so one that changed none must hear it; so must a withheld secret.
    tell_user = failed or bool(secrets) or (kind.collection and not changes)
    artifact = {
        "kind": kind.name,
        "changes": [asdict(change) for change in changes],
        "secrets": sorted(secrets),
        "failed": failed,
        "tell_user": tell_user,
        "problem": refusal.problem if refusal else None,
        "proposal": refusal.proposal if refusal else None,
        "pending": pending,
    }
    status = "error" if failed else "success"
    send_outcome(
        kind.name, calls[0]["id"], change_notes(artifact, [kind]), failed=failed,
        changes=event_changes(artifact["changes"]), pending=pending, **({"sources": list(sources)} if sources else {}),
        **text_change(artifact, kind),
    )
    return {
        "messages": [
            ToolMessage(content=report, tool_call_id=calls[0]["id"], artifact=artifact, status=status),
            *(ToolMessage(content=SEE_ABOVE, tool_call_id=call["id"]) for call in calls[1:]),
        ]
    }


def send_outcome(
    kind: str | None,
    tool_call_id: str | None,
    notes: list[str],
    *,
    failed: bool,
    changes: Sequence[dict[str, Any]] = (),
    pending: str | None = None,
    **details: Any,
) -> None:
    """Send a call's outcome to runs streamed with `stream_mode="custom"`: `{MEMORY_UPDATE_EVENT: {"kind",
    "tool_call_id", "notes", "failed", "changes", "pending"}}` (`kind` is None for a call that named no memory
    kind; `tool_call_id` is None for the calls a reply only quoted; `changes` are the saved changes field by
    field, each field's old and new value whole: `graph.memory.replaced.event_changes`; `pending` is the id of
    the pending change a failed update left, `graph.memory.pending`), with the `details` of a free-text kind's
    change (`text_change`)."""
    event = {
        "kind": kind, "tool_call_id": tool_call_id, "notes": notes, "failed": failed, "changes": list(changes),
        "pending": pending, **details,
    }
    get_stream_writer()({MEMORY_UPDATE_EVENT: event})


def text_change(artifact: dict[str, Any], kind: MemoryKind) -> dict[str, Any]:
    """What a free-text kind's `memory_update` event adds: `diff`, the sentences its change removed ("- …") and
    added ("+ …") in full, or those of the change held for confirmation; and `proposal` (None unless one is held):
    `{"code", "confirm", "words"}`, the code the user sends to save it and the words it took from pasted text.
    Nothing for any other kind."""
    if not kind.text:
        return {}
    proposal = artifact.get("proposal")
    changes = [proposal] if proposal else artifact["changes"]
    diff = [line for change in changes for line in document_diff(change["before"], change["after"])]
    held = {name: proposal[name] for name in ("code", "confirm", "words")} if proposal else None
    return {"diff": diff, "proposal": held}


def update_memory(
    state: State,
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    chat_model: ChatModelFactory,
    *,
    kind: MemoryKind,
    graph_runtime: GraphRuntime,
    propose: Propose,
    report: Report,
    retry: PendingChange | None = None,
) -> dict:
    """Run the recipe for one memory `kind` of the graph (`graph_runtime`), answering the pending UpdateMemory calls of its
    update type.

    Changes already committed under the update's seed answer the calls as they are; a conflict (with another
    writer, or with the update's own earlier run) makes it look for those, then read and propose again
    (`CONFLICT_RETRIES` times), and finally answer with the conflict. An update that fails leaves a pending
    change (`graph.memory.pending`; not a change held for the user to confirm, which waits for its code in the chat),
    unless it is the `retry` of one: then the batch that saves removes that one (`retry_context`), and a retry
    that fails leaves it as it was.
    """
    run, store = ResolvedRun.of(config, runtime, graph_runtime.runs), runtime.store
    calls = pending_update_calls(state["messages"], kind.update_type)
    request = UpdateRequest(state, config, store, run, chat_model(run.context), kind, graph_runtime, calls)
    context = retry_context(request, retry) if retry else change_context(request)
    if not retry and request.may_be_replay:  # a replay that saves settles what its first run left pending
        context = replace(context, settles=_left_pending(request, context))
    proposed: list[MemoryChange] = []
    for attempt in range(1 + CONFLICT_RETRIES):
        replay = attempt > 0 or request.may_be_replay
        if replay and (committed := committed_changes(store, request.user_id, kind, context.seed)):
            return answer_update_calls(calls, report(request, committed), kind, committed, set(),
                                       sources=saved_sources(context, kind, committed))
        try:
            proposed = propose(replace(request, fresh=attempt > 0))
        except UnusableOutputError as error:
            failure = EXTRACTION_FAILED.format(memory=kind.title, problem=error.problem)
            kept = _keep(request, context, retry, error.problem, None)
            return answer_update_calls(calls, failure, kind, [], set(), failed=True, pending=kept)
        except NotSaved as refusal:
            kept = _keep(request, context, retry, refusal.problem, None) if refusal.pending else None
            return answer_update_calls(calls, refusal.answer, kind, [], set(), refusal=refusal, pending=kept)
        try:
            saved, secrets = commit_changes(store, request.user_id, kind, proposed, context)
        except ConflictError:
            continue
        return answer_update_calls(calls, report(request, saved), kind, saved, secrets,
                                   sources=saved_sources(context, kind, saved))
    problem = CONFLICT_PROBLEM.format(memory=kind.label)
    kept = _keep(request, context, retry, problem, [asdict(change) for change in proposed] or None)
    return answer_update_calls(calls, UPDATE_CONFLICT.format(memory=kind.label), kind, [], set(), failed=True, pending=kept)


def retry_context(request: UpdateRequest, retry: PendingChange) -> ChangeContext:
    """The context of a pending change's retry: its thread, the user's message as kept, a seed of its own (so a
    retry replayed after its commit answers from what it saved), and the settling of the pending change in the
    batch that saves (`graph.memory.pending.settle_op`)."""
    return ChangeContext(
        thread_id=retry.thread_id, message=retry.message, seed=f"retry/{retry.id}", settles=settle_op(request.user_id, retry)
    )


def _left_pending(request: UpdateRequest, context: ChangeContext) -> tuple[Unchanged, PutOp] | None:
    """The settling of the pending change an earlier run of this update left, if it left one."""
    left = pending_by_id(request.store, request.user_id, pending_id(context.seed, request.kind.name))
    return settle_op(request.user_id, left) if left else None


def _keep(request: UpdateRequest, context: ChangeContext, retry: PendingChange | None, problem: str, proposal: Any) -> str | None:
    """Keep a failed update as a pending change (`graph.memory.pending`) and return its id; a failed retry keeps
    the pending change it retried as it was (None when it is gone: dropped, or saved by another retry)."""
    if retry:
        return retry.id if pending_by_id(request.store, request.user_id, retry.id) else None
    return keep_pending(
        request.store, request.user_id, request.kind.name, seed=context.seed, thread_id=context.thread_id,
        message=context.message, problem=problem, proposal=proposal,
    ).id


def must_tell_user(answer: ToolMessage) -> bool:
    """Whether a tool answer reports what the user must hear about: the call failed (was invalid, interrupted,
    conflicted, or its extraction unusable), a secret was kept out of memory, or a collection's update changed
    nothing (a reply that named a change would claim one that did not happen)."""
    artifact = answer.artifact if isinstance(answer.artifact, dict) else {}
    return answer.status == "error" or bool(artifact.get("tell_user"))

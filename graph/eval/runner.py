"""Plays eval cases through a graph and records what happened: replies, costs, failures and the memory left.

Each case runs in a throwaway data directory (a fresh SQLite database for this project's graph; the tutorial's
graph keeps its in-memory store), as one user, each of its threads a new thread id. The chat model comes from
`models(case)`: the configured endpoint's client for every case, or a scripted player per case. Cases run on
`concurrency` threads; a run stops starting cases once its time or call budget is spent.
"""

import json
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langgraph.graph.state import CompiledStateGraph

from graph.eval.cases import Case
from graph.names import AGENT_NAME
from graph.thread.model_message import UPDATE_TOOL
from graph.thread.reply_last import calls_message_id

EVAL_USER = "eval-user"
GRAPHS = ("maistro", "tutorial")
CHAT_NODES = {"maistro": AGENT_NAME, "tutorial": "task_mAIstro"}
MEMORY_NAMESPACES = {"profile": "profile", "todos": "todo", "instructions": "instructions"}


@dataclass
class TurnRecord:
    """One user turn as it ran: the reply, its costs and latencies, and what went wrong."""

    thread: int
    user: str
    reply: str = ""
    seconds: float = 0.0
    first_token_seconds: float | None = None
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    memory_turn: bool = False
    answered_first: bool = False
    failed_updates: int = 0
    notes: list[str] = field(default_factory=list)
    reminders: list[dict] = field(default_factory=list)
    error: str | None = None


@dataclass
class CaseRun:
    """A case as it ran: its turns, the memory the store held afterwards, every stored value as text, the memory
    kinds of the updates left pending (`graph.memory.pending`), and why it stopped early (None when every turn
    ran)."""

    case: Case
    turns: list[TurnRecord] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    stored_text: str = ""
    pending: list[str] = field(default_factory=list)
    stopped: str | None = None


class Meter(BaseCallbackHandler):
    """Counts the model calls and tokens of a turn, and of the whole run against its call budget."""

    def __init__(self, budget: "Budget") -> None:
        self.budget = budget
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        """Count a call."""
        self.calls += 1
        self.budget.count_call()

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        """Add the call's token usage (as the provider reported it)."""
        for generations in response.generations:
            for generation in generations:
                usage = getattr(getattr(generation, "message", None), "usage_metadata", None) or {}
                self.prompt_tokens += usage.get("input_tokens", 0)
                self.completion_tokens += usage.get("output_tokens", 0)


@dataclass
class Budget:
    """The run's limits: seconds since it started and model calls in all (None: unlimited)."""

    seconds: float | None = None
    calls: int | None = None
    started: float = field(default_factory=time.monotonic)
    used_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count_call(self) -> None:
        """Count one model call."""
        with self.lock:
            self.used_calls += 1

    def spent(self) -> str | None:
        """Why the run must not start anything more (a sentence), or None while it may."""
        if self.seconds is not None and time.monotonic() - self.started >= self.seconds:
            return f"the time budget of {self.seconds:g} s was spent"
        if self.calls is not None and self.used_calls >= self.calls:
            return f"the budget of {self.calls} model calls was spent"
        return None


@contextmanager
def open_target(graph_name: str, model: BaseChatModel) -> Iterator[CompiledStateGraph]:
    """The graph to evaluate around `model`, on fresh storage that is thrown away afterwards (this agent with its
    default memory kinds, which the cases are about, whatever MAISTRO_MEMORY_KINDS adds)."""
    if graph_name == "tutorial":
        from graph.eval.tutorial_graph import build_tutorial_graph

        yield build_tutorial_graph(model)
        return
    from graph import DEFAULT_MEMORY_KINDS, open_graph

    with tempfile.TemporaryDirectory(prefix="maistro-eval-") as data_dir:
        with open_graph(
            data_dir, database_url="", embeddings="", chat_model=lambda _settings: model, memory_kinds=DEFAULT_MEMORY_KINDS
        ) as compiled:
            yield compiled


def _turn_messages(messages: Sequence[Any]) -> list[Any]:
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last_user + 1 :])


def _reply_came_with_calls(reply: AIMessage, routing: AIMessage) -> bool:
    """Whether the turn's reply was given in the message that routed: still beside the calls, or moved after their
    answers under the routing message's id (`graph.thread.reply_last`)."""
    return reply is routing or routing.id == calls_message_id(reply.id)


def finish_record(record: TurnRecord, messages: Sequence[Any]) -> None:
    """Fill in what the turn's messages show: the reply, whether it routed and answered first, failed updates, the
    notes on its memory changes (`graph.memory.notes`) and the reminders the model asked for (`Remind`: the eval
    runs without a server, so they are scored as asked, not as made)."""
    from graph.memory.kinds import DEFAULT_MEMORY_KINDS
    from graph.memory.notes import change_notes
    from graph.nodes.remind import reminder_requests

    turn = _turn_messages(messages)
    spoken = [m for m in turn if isinstance(m, AIMessage) and m.text.strip()]
    record.reply = spoken[-1].text if spoken else ""
    routing = [m for m in turn if isinstance(m, AIMessage) and any(c["name"] == UPDATE_TOOL for c in m.tool_calls)]
    record.memory_turn = bool(routing)
    record.answered_first = bool(routing and spoken) and _reply_came_with_calls(spoken[-1], routing[0])
    record.failed_updates = sum(1 for m in turn if isinstance(m, ToolMessage) and m.status == "error")
    answers = [m for m in turn if isinstance(m, ToolMessage) and isinstance(m.artifact, dict)]
    record.notes = [note for m in answers for note in change_notes(m.artifact, DEFAULT_MEMORY_KINDS)]
    record.reminders = [request for m in turn if isinstance(m, AIMessage) for request in reminder_requests(m)]


def play_turn(compiled: CompiledStateGraph, chat_node: str, config: dict, record: TurnRecord, meter: Meter) -> None:
    """Send one user message and record its reply, first-token and turn latency, and failures."""
    started = time.monotonic()
    message = HumanMessage(content=record.user, id=str(uuid.uuid4()))
    try:
        for chunk, metadata in compiled.stream(
            {"messages": [message]}, {**config, "callbacks": [meter]}, stream_mode="messages"
        ):
            if (
                record.first_token_seconds is None
                and metadata.get("langgraph_node") == chat_node
                and isinstance(chunk, AIMessage | AIMessageChunk)
                and chunk.text
            ):
                record.first_token_seconds = time.monotonic() - started
    except Exception as error:  # a model or graph error fails the turn; the case goes on with the next one
        record.error = f"{type(error).__name__}: {error}".strip()
    record.seconds = time.monotonic() - started
    finish_record(record, compiled.get_state(config).values.get("messages", []))
    record.model_calls, record.prompt_tokens, record.completion_tokens = meter.calls, meter.prompt_tokens, meter.completion_tokens


def read_memory(compiled: CompiledStateGraph, user_id: str) -> tuple[dict[str, Any], str]:
    """The user's profile (a dict or None), ToDos (values) and instructions text, and every value the store
    holds (any namespace) as one JSON text, for the secrets check."""
    from graph.memory.store import search_all

    store = compiled.store
    found = {name: [item.value for item in search_all(store, (ns, user_id))] for name, ns in MEMORY_NAMESPACES.items()}
    memory = {
        "profile": found["profile"][0] if found["profile"] else None,
        "todos": found["todos"],
        "instructions": str(found["instructions"][0].get("memory", "")) if found["instructions"] else "",
    }
    everything = [item.value for ns in store.list_namespaces(limit=10_000) for item in search_all(store, ns)]
    return memory, json.dumps(everything, ensure_ascii=False, default=str)


def run_case(
    case: Case, graph_name: str, model: BaseChatModel, budget: Budget, timezone: str = "UTC"
) -> CaseRun:
    """Play every turn of `case` on a fresh graph (its `seed` put in first), then read the memory it left and the
    updates left pending; a case with the `user`'s own time sends their zone and message time with each run."""
    from graph.eval.seed import seed_memory
    from graph.memory.pending import list_pending

    run = CaseRun(case)
    user_time = {}
    if case.user is not None:  # the user's own zone and the time they write, as a client sends them
        user_time = {"timezone": case.user.timezone, "message_time": case.user.moment(today_in(timezone)).isoformat()}
    with open_target(graph_name, model) as compiled:
        seed_memory(compiled.store, graph_name, case, EVAL_USER, case.user_today(today_in(timezone), timezone)[0])
        for index, thread in enumerate(case.threads):
            configurable = {"thread_id": str(uuid.uuid4()), "user_id": EVAL_USER, "timezone": timezone, **user_time}
            config = {"configurable": configurable}
            for turn in thread:
                if reason := budget.spent():
                    run.stopped = reason
                    break
                record = TurnRecord(index, turn.user)
                play_turn(compiled, CHAT_NODES[graph_name], config, record, Meter(budget))
                run.turns.append(record)
            if run.stopped:
                break
        run.memory, run.stored_text = read_memory(compiled, EVAL_USER)
        run.pending = [pending.kind for pending in list_pending(compiled.store, EVAL_USER)]
    return run


def run_suite(
    cases: Sequence[Case],
    graph_name: str,
    models: Callable[[Case], BaseChatModel],
    *,
    concurrency: int = 1,
    budget: Budget | None = None,
    timezone: str = "UTC",
    on_case: Callable[[CaseRun | None, Case], None] | None = None,
) -> tuple[list[CaseRun], str | None]:
    """Run the cases (`concurrency` at a time) and return the runs, in the cases' order, and why the run
    stopped early (None if every case ran). `on_case(run, case)` is told of every case finished (run None:
    skipped for the budget)."""
    from concurrent.futures import ThreadPoolExecutor

    budget = budget or Budget()
    stopped: list[str] = []

    def one(case: Case) -> CaseRun | None:
        reason = budget.spent()
        run = None if reason else run_case(case, graph_name, models(case), budget, timezone)
        reason = reason or (run.stopped if run else None)
        if reason:
            stopped.append(reason)
        if on_case:
            on_case(run, case)
        return run

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        runs = list(pool.map(one, cases))
    return [run for run in runs if run is not None], (stopped[0] if stopped else None)


def today_in(timezone: str) -> date:
    """Today's date in the run's time zone: the day relative dates in the cases are counted from."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    return datetime.now(ZoneInfo(timezone)).date()

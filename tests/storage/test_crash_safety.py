"""Crash safety: SIGKILL a chatting process at random points of its turns, restart it, and chat on.

The worker (testing/crash_worker.py, which describes how a restarted life picks up the thread) plays
a plan of messages on one thread through the real graph, trustcall, the durable store and `ChatOpenAI`,
against the strict OpenAI stub running here. Each life either resumes a turn cut short through
`ChatSession` (the path of `maistro chat`) or, as a program calling `graph.stream` would, goes on with
the next message; several lives in a row may do either. The stub answers after a random delay, so kills
land inside model calls as well as between them, in every node. A life is killed while it starts up,
right after one of its memory writes commits (before the checkpoint records it: the replay case), or at
a random moment of one of its first turns. After each kill the test reads the store
and checks that no ToDo exists twice, that the two ToDos of one message exist both or neither, that every
acknowledged message's changes are there, and that nothing committed before the kill is gone (every ToDo
key keeps its task, done stays done, interests only grow, instructions never go back to an older text).
It also checks that the thread holds no user message twice (a retried message resumes its turn). After a
final clean life it checks the same, each acknowledged ToDo exactly once, that every message the thread
holds was acted on, the thread's tool-call bookkeeping, and that the stub answered no request with HTTP 400.

The stub's model is faithful but naive: it acts on every user message after the last assistant message,
and asked to extract ToDos it creates their tasks even when they already exist, as a model might. An
update node replayed after a kill therefore inserts them again, and only the core's replay-safe keys keep
them single; a message that reads as unanswered after its changes were saved is acted on twice, and one
whose update the graph dropped is never acted on.

The kill schedule and the stub's delays come from one seed, printed with the figures (pytest -s shows
them); MAISTRO_CRASH_SEED=N replays a seed (thread timing still varies).
"""

import ast
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langgraph.graph.state import CompiledStateGraph

from graph import build_graph, close_graph
from graph.app.session import ChatSession
from graph.memory.kinds import INSTRUCTIONS, PROFILE, TODO
from graph.memory.store import read_kind, read_text
from prompts import REPLY_FIRST_RULE
from testing.bookkeeping import assert_tool_calls_answered
from testing.crash_worker import BY_TEXT, PLAN, SLOW_DISK_TEXT, THREAD, USER, Message
from testing.openai_stub import OpenAIStub, StubError, system_text, text_reply, tool_calls_reply, tool_names
from testing.scripted_model import documents_in_prompt
from testing.scripted_session import task_keeper
from testing.stub_script import kind_of, update

ROOT = Path(__file__).resolve().parents[2]
KILLS = 55
MAX_REPLY_DELAY = 0.06
# How a life is killed, with weights: while it starts up (a forked life opens its storage in about 20 ms);
# as soon as its n-th store write committed; or at a random moment of its n-th turn, within a span as
# long as a life's first turn (later turns take about 0.15 s, so some of these kills land in the next).
# 1 <= n <= MOST_TRIGGERS_BEFORE_KILL. A life that writes nothing for a few turns is killed anyway.
KILL_MODES = {"startup": 1, "commit": 3, "turn": 6}
TRIGGERS = {"commit": ("wrote",), "turn": ("start", "resume")}
STARTUP_SPAN = 0.05
TURN_SPAN = 0.4
MOST_TRIGGERS_BEFORE_KILL = 3
FINAL_TURNS = 3
EVENT_TIMEOUT = 60.0
CONFIG = {"configurable": {"thread_id": THREAD, "user_id": USER}}


def _message_text(message: dict) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def planned_messages(request: dict) -> list[Message]:
    """The plan's messages the request leaves unanswered: those the user sent after the last assistant message.

    A naive model acts on all of them, so a message that reads as unanswered after its changes were saved
    is acted on twice, and one that the graph dropped is never acted on.
    """
    messages = request["messages"]
    last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    lines = [
        line
        for message in messages[last_assistant + 1 :]
        if message["role"] == "user"
        for line in _message_text(message).splitlines()
    ]
    planned = [PLAN[BY_TEXT[line]] for line in lines if line in BY_TEXT]
    if not planned:
        raise LookupError("no planned user message in the request")
    return planned


def existing_documents(request: dict) -> dict[str, dict]:
    """The documents trustcall put into the prompt, by id, as a model reads them."""
    text = "\n".join(_message_text(message) for message in request["messages"])
    return {doc_id: ast.literal_eval(doc) for doc_id, doc in documents_in_prompt(text).items()}


def todo_reply(planned: list[Message], documents: dict[str, dict]) -> dict:
    """Create the messages' tasks (even if they exist), and mark their done tasks done: a task created in the
    same reply is created done, an existing one patched, a missing one created done."""
    done = {message.done for message in planned if message.done}
    created = {task: {"task": task, "solutions": ["Just do it"]} for message in planned for task in message.tasks}
    calls = []
    for task in sorted(done):
        matches = [doc_id for doc_id, doc in documents.items() if doc.get("task") == task]
        if task in created or not matches:
            created[task] = {"task": task, "solutions": ["Just do it"], "status": "done"}
            continue
        patch = {"op": "replace", "path": "/status", "value": "done"}
        calls.append(("PatchDoc", {"json_doc_id": matches[0], "planned_edits": "Mark it done.", "patches": [patch]}))
    return tool_calls_reply(*(("ToDo", document) for document in created.values()), *calls)


def profile_reply(planned: list[Message], request: dict) -> dict:
    """Create the profile with the messages' hobbies, or patch them into the existing interests."""
    hobbies = [message.hobby for message in planned if message.hobby]
    if "Profile" in tool_names(request):
        return tool_calls_reply(("Profile", {"interests": hobbies}))
    [(doc_id, doc)] = existing_documents(request).items()
    interests = [*doc.get("interests", [])]
    interests += [hobby for hobby in hobbies if hobby not in interests]
    patch = {"op": "replace", "path": "/interests", "value": interests}
    return tool_calls_reply(
        ("PatchDoc", {"json_doc_id": doc_id, "planned_edits": "Add the hobbies.", "patches": [patch]})
    )


class PlannedModel:
    """The stub's responder: answers as a naive model following the plan would, each after a random delay."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, request: dict) -> dict | StubError:
        """Route new user messages, answer after updates, summarise, or extract the planned changes."""
        time.sleep(self.rng.uniform(0, MAX_REPLY_DELAY))
        kind = kind_of(request)
        if kind == "chat":
            if "UpdateMemory" in tool_names(request) and request["messages"][-1]["role"] == "user":
                kinds = dict.fromkeys(kind for message in planned_messages(request) for kind in message.update_types)
                # Asked to answer first, it does so half of the time; otherwise it answers after the updates.
                speaks_first = REPLY_FIRST_RULE in system_text(request) and self.rng.random() < 0.5
                return update(*kinds, content="Saving that." if speaks_first else None)
            return text_reply("Saved.")
        planned = planned_messages(request)
        if kind == "todo":
            return todo_reply(planned, existing_documents(request))
        if kind == "profile":
            return profile_reply(planned, request)
        return text_reply([message.style for message in planned if message.style][-1])


@dataclass(frozen=True)
class Memories:
    """What the store holds for the test user at one moment."""

    todos: dict[str, dict]
    interests: tuple[str, ...]
    instructions: str

    @classmethod
    def read(cls, store) -> "Memories":
        """Read the user's ToDos (by key), profile interests and instructions."""
        profile = read_kind(store, PROFILE, USER)
        return cls(
            {item.key: item.value for item in read_kind(store, TODO, USER)},
            tuple(profile[0].value.get("interests", [])) if profile else (),
            read_text(store, INSTRUCTIONS, USER),
        )

    def task_counts(self) -> Counter:
        """How many ToDos carry each task."""
        return Counter(todo["task"] for todo in self.todos.values())

    def style_index(self) -> int:
        """The plan index of the message whose style the instructions hold (-1 when there are none)."""
        return int(self.instructions.split()[-1]) if self.instructions else -1


@dataclass
class Progress:
    """What the lives reported: acknowledged and abandoned messages, and the turn in flight."""

    acked: set[int] = field(default_factory=set)
    abandoned: set[int] = field(default_factory=set)
    resumed: int = 0
    in_turn: int | None = None
    highest: int = -1

    def record(self, event: list[str]) -> None:
        """Take one event line of a life into account."""
        word, *rest = event
        if word not in ("start", "resume", "ack", "abandon"):
            return
        index = int(rest[0])
        self.highest = max(self.highest, index)
        if word == "ack":
            self.acked.add(index)
            self.in_turn = None
        elif word == "abandon":
            self.abandoned.add(index)
        else:
            self.resumed += word == "resume"
            self.in_turn = index


def check_consistent(memories: Memories, progress: Progress) -> None:
    """No ToDo twice, a message's two ToDos both or neither, and every acknowledged change present."""
    counts = memories.task_counts()
    assert not [task for task, count in counts.items() if count > 1], f"duplicate ToDos: {counts}"
    for planned in PLAN:
        assert len({task in counts for task in planned.tasks}) <= 1, f"half of {planned.tasks} was written"
    check_applied(memories, progress.acked)


def check_applied(memories: Memories, indices: set[int]) -> None:
    """The changes of the plan's messages at `indices` are all in the store."""
    counts = memories.task_counts()
    status = {todo["task"]: todo["status"] for todo in memories.todos.values()}
    for index in sorted(indices):
        planned = PLAN[index]
        assert all(task in counts for task in planned.tasks), f"message {index} lost its ToDos"
        assert planned.done is None or status.get(planned.done) == "done", f"message {index} not applied"
        assert planned.hobby is None or planned.hobby in memories.interests, f"message {index} lost its hobby"
        assert planned.style is None or memories.style_index() >= index, f"message {index} lost its style"


def check_nothing_lost(before: Memories, after: Memories) -> None:
    """Everything committed in `before` is still in `after`: keys, tasks, done marks, interests, instructions."""
    for key, todo in before.todos.items():
        kept = after.todos.get(key)
        assert kept is not None and kept["task"] == todo["task"], f"ToDo {todo['task']} ({key}) disappeared"
        assert todo["status"] != "done" or kept["status"] == "done", f"{todo['task']} is no longer done"
    assert set(before.interests) <= set(after.interests), "an interest disappeared"
    assert after.style_index() >= before.style_index(), "the instructions went back to an older text"


class Worker:
    """The crash worker process and the event lines its lives print, read in a background thread."""

    def __init__(self, target: str, env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "testing.crash_worker", "serve", target],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.events: queue.Queue[list[str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        assert self.next(EVENT_TIMEOUT) == ["ready"], self.problem("the worker did not start")

    def _read(self) -> None:
        for line in self.process.stdout:
            self.events.put(line.split())
        self.events.put(["eof"])

    def problem(self, what: str) -> str:
        """An assertion message with the worker's stderr."""
        return f"{what}; worker stderr:\n{self.log.read_text()[-4000:]}"

    def next(self, timeout: float) -> list[str] | None:
        """The next event line, or None when none came within `timeout` seconds."""
        try:
            return self.events.get(timeout=max(timeout, 0))
        except queue.Empty:
            return None

    def send(self, *words: object) -> None:
        """Send one command line."""
        self.process.stdin.write(" ".join(map(str, words)) + "\n")
        self.process.stdin.flush()

    def spawn(self, policy: str, until: int) -> int:
        """Start a life and return its pid."""
        self.send("spawn", policy, until)
        event = self.next(EVENT_TIMEOUT)
        assert event and event[0] == "life", self.problem(f"no life started: {event}")
        return int(event[1])

    def reap(self, pid: int, progress: Progress) -> int:
        """Wait for the life to end, recording the events it printed before; its exit code."""
        self.send("reap", pid)
        while True:
            event = self.next(EVENT_TIMEOUT)
            assert event and event[0] != "eof", self.problem(f"the worker ended while reaping: {event}")
            if event[:2] == ["exit", str(pid)]:
                return int(event[2])
            progress.record(event)

    def close(self) -> None:
        """End the worker: it leaves when its stdin closes."""
        self.process.stdin.close()
        self.process.wait(timeout=EVENT_TIMEOUT)


def _unused_model(_settings):
    raise AssertionError("the test's reader never calls a model")


@dataclass
class Campaign:
    """One run of kills and restarts against one backend, with its figures."""

    worker: Worker
    reader: CompiledStateGraph
    rng: random.Random
    policies: tuple[str, ...]
    progress: Progress = field(default_factory=Progress)
    kills: int = 0
    mid_turn_kills: int = 0
    landed: Counter = field(default_factory=Counter)
    memories: Memories = Memories({}, (), "")

    def life_killed_at_random(self) -> None:
        """Run one life, SIGKILL it at a random moment, then check the store against the last snapshot."""
        pid = self.worker.spawn(self.rng.choice(self.policies), len(PLAN))
        self.progress.in_turn = None
        [mode] = self.rng.choices(list(KILL_MODES), weights=list(KILL_MODES.values()))
        triggers_left = self.rng.randint(1, MOST_TRIGGERS_BEFORE_KILL)
        delay = {"startup": STARTUP_SPAN, "commit": 0.0, "turn": TURN_SPAN}[mode] * self.rng.random()
        deadline = time.monotonic() + delay if mode == "startup" else None
        turns = 0
        while deadline is None or time.monotonic() < deadline:
            event = self.worker.next(deadline - time.monotonic() if deadline else EVENT_TIMEOUT)
            if event is None:
                assert deadline is not None, self.worker.problem("a life stopped reporting")
                break
            assert event[0] not in ("done", "eof"), self.worker.problem(f"a life ended early: {event}")
            self.progress.record(event)
            turns += event[0] in TRIGGERS["turn"]
            triggers_left -= event[0] in TRIGGERS.get(mode, ())
            if deadline is None and (triggers_left == 0 or turns > MOST_TRIGGERS_BEFORE_KILL + 1):
                deadline = time.monotonic() + delay
        os.kill(pid, signal.SIGKILL)
        code = self.worker.reap(pid, self.progress)
        assert code in (0, -signal.SIGKILL), self.worker.problem(f"a life failed with exit code {code}")
        self.kills += code == -signal.SIGKILL
        self.mid_turn_kills += code == -signal.SIGKILL and self.progress.in_turn is not None
        self.check()

    def final_life(self) -> None:
        """Let a life settle the last turn and play a few more, unharmed."""
        until = self.progress.highest + 1 + FINAL_TURNS
        pid = self.worker.spawn(self.policies[0], until)
        while (event := self.worker.next(EVENT_TIMEOUT)) != ["done"]:
            assert event and event[0] != "eof", self.worker.problem(f"the final life failed: {event}")
            self.progress.record(event)
        assert self.worker.reap(pid, self.progress) == 0, self.worker.problem("the final life failed")
        assert self.progress.acked | self.progress.abandoned == set(range(until))
        self.check()

    def check(self) -> None:
        """Compare the store with the previous snapshot and with what was acknowledged; check the thread."""
        memories = Memories.read(self.reader.store)
        check_nothing_lost(self.memories, memories)
        check_consistent(memories, self.progress)
        self.memories = memories
        state = self.reader.get_state(CONFIG)
        self.landed["+".join(state.next) or "no next step"] += 1
        said = Counter(m.text for m in state.values.get("messages", []) if isinstance(m, HumanMessage))
        assert not [text for text, count in said.items() if count > 1], f"a user message twice: {said}"


@pytest.fixture
def seed() -> int:
    """The seed of the kill schedule and the stub's delays: MAISTRO_CRASH_SEED, else a fresh one (printed)."""
    value = int(os.environ.get("MAISTRO_CRASH_SEED") or random.randrange(2**32))
    print(f"crash-safety seed {value}")
    return value


@pytest.fixture
def planned_stub(seed: int):
    """The strict OpenAI stub, answering as the plan's model after random delays."""
    with OpenAIStub(PlannedModel(seed)) as server:
        yield server


@pytest.mark.parametrize(
    ("backend", "policies"),
    [("sqlite", ("resume", "stream")), ("postgres", ("resume", "stream")), ("sqlite", ("stream",))],
    ids=["sqlite", "postgres", "sqlite-graph-stream-only"],
)
def test_kills_at_random_points_leave_no_duplicate_no_loss_and_no_rejected_request(
    backend, policies, seed, planned_stub, tmp_path, request
):
    target = request.getfixturevalue("fresh_database") if backend == "postgres" else str(tmp_path / "data")
    storage = {"database_url": target} if backend == "postgres" else {"data_dir": target}
    env = {
        **os.environ,
        "OPENAI_BASE_URL": planned_stub.base_url,
        "OPENAI_API_KEY": "test",
        "MAISTRO_MODEL": "gpt-stub",
    }
    reader = build_graph(**storage, chat_model=_unused_model)
    worker = Worker(target, env, tmp_path / "worker.log")
    campaign = Campaign(worker, reader, random.Random(seed), policies)
    started = time.monotonic()
    try:
        while campaign.kills < KILLS:
            campaign.life_killed_at_random()
        campaign.final_life()
        state = reader.get_state(CONFIG)
    finally:
        worker.close()
        close_graph(reader)
    progress = campaign.progress
    print(
        f"{backend}: seed {seed}, {campaign.kills} kills ({campaign.mid_turn_kills} inside a turn), "
        f"{len(progress.acked)} turns acknowledged, {progress.resumed} resumed, {len(progress.abandoned)} "
        f"abandoned, {len(planned_stub.requests)} model requests, {time.monotonic() - started:.1f} s; "
        f"the thread's next step after each life: {dict(campaign.landed)}"
    )

    assert campaign.kills >= 50
    counts = campaign.memories.task_counts()
    assert all(counts[task] == 1 for index in progress.acked for task in PLAN[index].tasks)
    in_thread = {BY_TEXT[m.text] for m in state.values["messages"] if isinstance(m, HumanMessage)}
    check_applied(campaign.memories, in_thread)
    assert state.next == ()
    assert_tool_calls_answered(state.values["messages"])
    rejected = [problem for _, problem in planned_stub.rejections]
    assert rejected == [], f"seed {seed}: HTTP 400 for {rejected}"


@pytest.mark.parametrize("slow", ["checkpoint", "checkpoint-and-writes"])
def test_a_turn_killed_right_after_its_todo_write_is_retried_without_a_second_todo(slow, tmp_path):
    """The process died once the ToDo was committed, while the routing step's checkpoint (and, with
    `checkpoint-and-writes`, its saved writes) were still being written; sending the same message again
    must finish that turn without inserting the ToDo again or keeping the message twice."""
    died = subprocess.run(
        [sys.executable, "-m", "testing.crash_worker", "die-after-todo-write", str(tmp_path), slow],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=EVENT_TIMEOUT,
    )
    assert died.returncode == -signal.SIGKILL, died.stderr
    model = task_keeper()
    agent = build_graph(tmp_path, chat_model=lambda _settings: model)
    try:
        assert [item.value["task"] for item in read_kind(agent.store, TODO, USER)] == ["water the plants"]
        for _event in ChatSession(agent, USER, THREAD).send(SLOW_DISK_TEXT):
            pass
        messages = agent.get_state(CONFIG).values["messages"]
        tasks = [item.value["task"] for item in read_kind(agent.store, TODO, USER)]
    finally:
        close_graph(agent)

    assert tasks == ["water the plants"]
    assert [m.text for m in messages if isinstance(m, HumanMessage)] == [SLOW_DISK_TEXT]
    assert_tool_calls_answered(messages)

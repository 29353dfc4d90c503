"""The processes the crash-safety test kills.

`python -m testing.crash_worker serve TARGET` (TARGET is a data directory or a postgresql:// URL) imports
the agent once, prints `ready` and serves commands read from stdin, one per line:

- `spawn POLICY UNTIL` forks a child, a *life*, that opens the durable graph on TARGET and chats on one
  thread through `ChatSession` (the CLI's path) until message UNTIL of `PLAN`, then prints `done`;
- `reap PID` waits for that child and prints `exit PID CODE` (a negative code is the signal that ended it).

Forking from a process that has only imported modules (no connection, no thread, no client yet) gives
each life a fresh process with its own connections, caches and model client in milliseconds instead of
the seconds an interpreter spends importing LangChain. A killed child stays a zombie until reaped, so the
test's SIGKILL can never reach a reused pid.

Where a life continues: it reads the thread from the checkpoint, as `get_state` shows it.
- No user message yet: it starts with message 0.
- Last user message I, and the turn has its reply with every call answered (`turn_answered`): it finished;
  the life prints `ack I` and goes on with I + 1. `get_state`'s `next` cannot tell this: when the process
  died after a step's writes were saved but before the checkpoint that follows them, it shows those
  writes applied and nothing next, although the turn goes on from there.
- Otherwise the turn was cut short: with POLICY `resume` the life sends message I again, which
  `ChatSession` must turn into a resume from the last checkpoint (the retry path of `maistro chat`), and
  prints `resume I`, then `ack I`; with POLICY `stream` it prints `abandon I` and goes on with I + 1 as a
  program would, so the graph must finish the dead turn before it handles the new message.

A `resume` life plays its messages through `ChatSession`; a `stream` life sends each one with
`graph.stream({"messages": [message]}, config)`, as a program using the graph directly does.
Then for each further message J it prints `start J`, plays the turn and prints `ack J`. After each store
write that commits, a life prints `wrote` and pauses for COMMIT_PAUSE_SECONDS, as if the checkpoint
database were slower than the store, so the test can aim kills between a memory's commit and the
checkpoint that records it. Each line is one write(2) shorter than PIPE_BUF, so neither a kill nor
parallel nodes tear or mix lines.
The model client never retries (`max_retries=0`): any error answer from the model server ends the life
with a traceback and exit code 1.

`python -m testing.crash_worker die-after-todo-write DATA_DIR SLOW` plays one ToDo turn with a scripted
model on a slow disk and SIGKILLs itself as soon as the ToDo is committed. The slow disk delays the
checkpoint that holds the routing call (SLOW `checkpoint`), or that checkpoint and the routing step's
saved writes too (SLOW `checkpoint-and-writes`); LangGraph's default "async" durability writes both in
the background while the next step runs.
"""

import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import PutOp

from graph import build_graph
from graph.app.session import ChatSession
from graph.backends.model import load_chat_model
from graph.thread.tool_calls import turn_answered
from testing.scripted_session import task_keeper
from testing.stored_names import TODO

USER = "crash-user"
THREAD = "crash-thread"
PLAN_SIZE = 400
COMMIT_PAUSE_SECONDS = 0.03
SLOW_DISK_SECONDS = 0.5
SLOW_DISK_TEXT = "Remind me: water the plants"


@dataclass(frozen=True)
class Message:
    """One user message of the plan and the memory changes a faithful model makes for it."""

    text: str
    update_types: tuple[str, ...]
    tasks: tuple[str, ...] = ()
    done: str | None = None
    hobby: str | None = None
    style: str | None = None


def message(index: int) -> Message:
    """The index-th message: ToDos added alone, in pairs and with a hobby, marked done, hobbies, instructions."""
    task, hobby, style = f"task {index}", f"hobby {index}", f"style {index}"
    kind = index % 6
    if kind == 0:
        return Message(f"Remind me: {task}", ("todo",), tasks=(task,))
    if kind == 1:
        pair = (f"{task}a", f"{task}b")
        return Message(f"Remind me: {pair[0]} and {pair[1]}", ("todo",), tasks=pair)
    if kind == 2:
        return Message(f"I took up {hobby}. Remind me: {task}", ("user", "todo"), tasks=(task,), hobby=hobby)
    if kind == 3:
        return Message(f"task {index - 3} is done", ("todo",), done=f"task {index - 3}")
    if kind == 4:
        return Message(f"I took up {hobby}", ("user",), hobby=hobby)
    return Message(f"Write my ToDos in {style}", ("instructions",), style=style)


PLAN = [message(index) for index in range(PLAN_SIZE)]
BY_TEXT = {planned.text: index for index, planned in enumerate(PLAN)}


def say(*words: object) -> None:
    """Print one event line for the test in a single write, so lines from parallel nodes never mix."""
    os.write(sys.stdout.fileno(), (" ".join(map(str, words)) + "\n").encode())


def _model(settings):
    return load_chat_model(settings, max_retries=0)


def _report_writes(store) -> None:
    """Make every committed store write print `wrote` and pause for COMMIT_PAUSE_SECONDS."""
    batch = store.batch

    def batch_and_report(ops):
        results = batch(ops)
        if any(isinstance(op, PutOp) for op in ops):
            say("wrote")
            time.sleep(COMMIT_PAUSE_SECONDS)
        return results

    store.batch = batch_and_report


def _play(session: ChatSession, policy: str, index: int) -> None:
    if policy == "stream":
        message = {"messages": [HumanMessage(PLAN[index].text)]}
        for _update in session.graph.stream(message, session.config, stream_mode="updates"):
            pass
    else:
        for _event in session.send(PLAN[index].text):
            pass
    say("ack", index)


def life(target: str, policy: str, until: int) -> None:
    """Open the graph on TARGET, settle the thread's last turn according to POLICY, then play up to UNTIL."""
    is_url = target.startswith("postgres")
    agent = build_graph(None if is_url else target, database_url=target if is_url else None, chat_model=_model)
    _report_writes(agent.store)
    session = ChatSession(agent, USER, THREAD)
    messages = agent.get_state(session.config).values.get("messages", [])
    said = [m.text for m in messages if isinstance(m, HumanMessage)]
    start = 0
    if said:
        last = BY_TEXT[said[-1]]
        start = last + 1
        if turn_answered(messages):
            say("ack", last)
        elif policy == "resume":
            say("resume", last)
            _play(session, policy, last)
        else:
            say("abandon", last)
    for index in range(start, until):
        say("start", index)
        _play(session, policy, index)
    say("done")


def _child(target: str, policy: str, until: str) -> None:
    """Run one life in the forked child and leave without returning to the command loop."""
    code = 0
    try:
        say("life", os.getpid())
        life(target, policy, int(until))
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)


def _routes(value: object) -> bool:
    """Whether a checkpointed value is, or is a list holding, an assistant message with tool calls."""
    values = value if isinstance(value, list) else [value]
    return any(isinstance(item, AIMessage) and item.tool_calls for item in values)


def die_after_todo_write(data_dir: str, slow: str) -> None:
    """Play one ToDo turn on a slow disk (see the module docstring) and SIGKILL this process once the ToDo is committed."""
    model = task_keeper()
    agent = build_graph(data_dir, chat_model=lambda _settings: model)
    saver, batch = agent.checkpointer, agent.store.batch
    put, put_writes = saver.put, saver.put_writes

    def slow_put(config, checkpoint, metadata, new_versions):
        if _routes((checkpoint["channel_values"].get("messages") or [None])[-1]):
            time.sleep(SLOW_DISK_SECONDS)
        return put(config, checkpoint, metadata, new_versions)

    def slow_put_writes(config, writes, task_id, task_path=""):
        if any(_routes(value) for _channel, value in writes):
            time.sleep(SLOW_DISK_SECONDS)
        return put_writes(config, writes, task_id, task_path)

    def batch_then_die(ops):
        results = batch(ops)
        if any(isinstance(op, PutOp) and op.namespace[0] == TODO for op in ops):
            os.kill(os.getpid(), signal.SIGKILL)
        return results

    saver.put = slow_put
    if slow == "checkpoint-and-writes":
        saver.put_writes = slow_put_writes
    agent.store.batch = batch_then_die
    for _event in ChatSession(agent, USER, THREAD).send(SLOW_DISK_TEXT):
        pass


def serve(target: str) -> None:
    """Answer `spawn` and `reap` commands from stdin until it closes."""
    say("ready")
    while line := sys.stdin.readline():
        command, *args = line.split()
        if command == "spawn":
            sys.stderr.flush()
            if os.fork() == 0:
                _child(target, *args)
        elif command == "reap":
            pid = int(args[0])
            _, status = os.waitpid(pid, 0)
            say("exit", pid, os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    {"serve": serve, "die-after-todo-write": die_after_todo_write}[sys.argv[1]](*sys.argv[2:])

"""A zero-latency OpenAI-compatible endpoint for the benchmarks and the tests: the stub answering as a chore-keeping
model.

It runs `testing.openai_stub.OpenAIStub` (a real HTTP server on 127.0.0.1, strict about tool-call
bookkeeping like OpenAI) with a responder that reads each request the way a model would: the chat call
routes a message about a chore ("add chore: ...", "I finished chore (N)") to the ToDo update (and "I moved
to X; ..." to the profile too) and then confirms, and answers anything else (chit-chat) without routing;
with `replies_first`, a chat prompt that asks for the reply first (`prompts.REPLY_FIRST_RULE`) gets the
confirmation in the routing message itself, as a model following that rule gives it. The profile
extraction files the city; the ToDo extraction creates the chore of an "add chore: ..." message and patches
the one named in "I finished chore (N)" to done, finding its id in the documents trustcall put into the
prompt; the summary call answers a summary. Every request is recorded with what sent it and its place in
the order of requests and answers.
"""

import itertools
import json
import os
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from graph.text_tokens import count_text_tokens
from graph.thread.model_message import UPDATE_TOOL
from prompts import REPLY_FIRST_RULE
from testing.openai_stub import OpenAIStub, system_text, text_reply, tool_calls_reply, tool_names
from testing.scripted_model import documents_in_prompt
from testing.stub_script import kind_of, update

ADD = "add chore: "
MOVED = "I moved to "
FINISHED = re.compile(r"I finished chore \((\d+)\)")
SUMMARIZER = "You keep a running summary"
CONFIRMATION = "Done, your list is up to date."
REPLY_FIRST_CONFIRMATION = "Sure, I'm adding that to your ToDo list now."
CHIT_CHAT_REPLY = "Happy to chat! Tell me whenever something needs doing."


@dataclass(frozen=True)
class Request:
    """One request the endpoint answered: who sent it, its order, and its prompt's size."""

    kind: str
    requested: int
    answered: int
    messages: int
    prompt_tokens: int


def _text(message: dict) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def prompt_tokens(request: dict) -> int:
    """Estimated prompt tokens of a request (CJK-aware): message texts, tool calls, tool schemas, 4 per message."""
    messages = request.get("messages") or []
    texts = sum(count_text_tokens(_text(m)) for m in messages)
    calls = sum(count_text_tokens(json.dumps(m.get("tool_calls"), ensure_ascii=False)) for m in messages if m.get("tool_calls"))
    tools = count_text_tokens(json.dumps(request.get("tools") or [], ensure_ascii=False))
    return texts + calls + tools + 4 * len(messages)


def request_documents(request: dict) -> dict[str, str]:
    """The documents trustcall put into the request's prompt: their texts by id."""
    return documents_in_prompt("\n".join(_text(m) for m in request["messages"]))


def profile_reply(request: dict, fields: dict) -> dict:
    """The profile extraction's answer that files `fields`: a new profile when trustcall offers the Profile tool,
    else a patch of the one existing profile (trustcall then offers only PatchDoc)."""
    if "Profile" in tool_names(request):
        return tool_calls_reply(("Profile", fields))
    [profile_id] = request_documents(request)
    patches = [{"op": "replace", "path": f"/{name}", "value": value} for name, value in fields.items()]
    return tool_calls_reply(("PatchDoc", {"json_doc_id": profile_id, "planned_edits": "Update the profile.", "patches": patches}))


def latest_user_line(request: dict) -> str:
    """The last line of the user's latest message in the request ("" when it has none)."""
    for message in reversed(request["messages"]):
        if message["role"] == "user":
            return _text(message).strip().splitlines()[-1]
    return ""


class ChoreEndpoint:
    """The responder, and the record of every request it answered."""

    def __init__(self, *, replies_first: bool = False) -> None:
        """A responder that routes with calls alone, or with `replies_first` replies beside its calls when the
        chat prompt asks for that (`bench.run` keeps the default: its model routes with calls alone)."""
        self.replies_first = replies_first
        self.requests: list[Request] = []
        self._order = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, request: dict) -> dict:
        """Answer one request (the stub serialises calls) and record it."""
        requested = next(self._order)
        reply, kind = self._reply(request)
        record = Request(kind, requested, next(self._order), len(request["messages"]), prompt_tokens(request))
        with self._lock:
            self.requests.append(record)
        return reply

    def _reply(self, request: dict) -> tuple[dict, str]:
        kind = kind_of(request)
        if kind == "chat":
            if system_text(request).startswith(SUMMARIZER):
                return text_reply("The user adds chores and finishes them one by one."), "summary"
            if request["messages"][-1]["role"] == "user" and UPDATE_TOOL in tool_names(request):
                return self._route(request), kind
            return text_reply(CONFIRMATION), kind
        if kind == "todo":
            return self._todo(request), kind
        if kind == "profile":
            return self._profile(request), kind
        return text_reply("Nothing to change."), kind

    def _route(self, request: dict) -> dict:
        line = latest_user_line(request)
        kinds = ("user", "todo") if line.startswith(MOVED) else ("todo",) if ADD in line or FINISHED.search(line) else ()
        if not kinds:
            return text_reply(CHIT_CHAT_REPLY)
        replies_first = self.replies_first and REPLY_FIRST_RULE in system_text(request)
        return update(*kinds, content=REPLY_FIRST_CONFIRMATION if replies_first else None)

    def _profile(self, request: dict) -> dict:
        """File the city: a new profile, or a patch of the existing one (trustcall then offers only PatchDoc)."""
        return profile_reply(request, {"location": latest_user_line(request).removeprefix(MOVED).split(";")[0]})

    def _todo(self, request: dict) -> dict:
        line = latest_user_line(request)
        if ADD in line:
            return tool_calls_reply(("ToDo", {"task": line.split(ADD, 1)[1], "solutions": ["This weekend"]}))
        if found := FINISHED.search(line):
            ids = [doc_id for doc_id, doc in request_documents(request).items() if f"(chore {found[1]})" in doc]
            if ids:
                patch = {"json_doc_id": ids[0], "planned_edits": "Mark it done.",
                         "patches": [{"op": "replace", "path": "/status", "value": "done"}]}
                return tool_calls_reply(("PatchDoc", patch))
        return text_reply("Nothing to change.")

    def start(self, latency: float = 0.0) -> OpenAIStub:
        """The HTTP server answering with this responder (a context manager), each answer `latency` s late."""
        return OpenAIStub(self, latency)


@contextmanager
def model_environment(base_url: str) -> Iterator[None]:
    """Point the default model factory (OPENAI_BASE_URL, OPENAI_API_KEY, MAISTRO_MODEL) at `base_url` for the block,
    with tool calls (MAISTRO_CALL_MODE=tools: the benchmarks' endpoints play tool-calling models)."""
    names = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "MAISTRO_MODEL", "MAISTRO_CALL_MODE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(
        {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench", "MAISTRO_MODEL": "gpt-bench", "MAISTRO_CALL_MODE": "tools"}
    )
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def sequential_requests(requests: Sequence[Request]) -> int:
    """The longest chain of requests that waited for one another, from the order of requests and answers.

    A request waits for an answered earlier one sent by the same part of the agent, and the chat node's
    requests (chat and summary) wait for everything answered before them and hold up everything after
    them; the update nodes of one round never wait for each other. A busy machine that happens to answer
    two parallel updates one after the other therefore does not change the figure.
    """
    chat = ("chat", "summary")
    chain = [1] * len(requests)
    for i, request in enumerate(requests):
        for j, earlier in enumerate(requests[:i]):
            waits = earlier.kind == request.kind or earlier.kind in chat or request.kind in chat
            if waits and earlier.answered < request.requested:
                chain[i] = max(chain[i], chain[j] + 1)
    return max(chain, default=0)

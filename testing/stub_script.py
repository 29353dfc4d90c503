"""Scripted replies for the OpenAI stub, queued per part of the agent that sends the request."""

from collections import defaultdict
from collections.abc import Callable

from graph.backends.call_mode import PRECHECK_PROMPT
from graph.thread.model_message import UPDATE_TOOL
from testing.openai_stub import (
    Outcome,
    StubError,
    json_reply,
    json_schema,
    system_text,
    tool_calls_reply,
    tool_names,
)

Reply = Outcome | Callable[[dict], Outcome]


def kind_of(request: dict) -> str:
    """Which part of the agent sent the request, judged the way a server sees it: by tools (or the name of the
    json_schema a model without tools answers) and prompt. "precheck" is the call mode's tiny tool-call request,
    "route" the routing question a model that answers in JSON gets (its reply is a "chat" request of its own)."""
    messages = request.get("messages") or []
    if messages and messages[-1].get("content") == PRECHECK_PROMPT:
        return "precheck"
    schema = json_schema(request)
    names = tool_names(request) or ([schema.get("name", "")] if schema is not None else [])
    if names == [UPDATE_TOOL] and schema is not None:
        return "route"
    if UPDATE_TOOL in names:
        return "chat"
    if "Profile" in names or names == ["PatchDoc"]:
        return "profile"
    if "ToDo" in names:
        return "todo"
    if system_text(request).startswith("Reflect on the following interaction"):
        return "instructions"
    return names[0] if names else "chat"  # another memory kind's extraction is known by its schema's tool


class Script:
    """Replies queued per kind of request; the stub calls it for every request that passes validation.

    A queued reply may be a function of the request, for replies that depend on what the agent sent.
    """

    def __init__(self) -> None:
        self.replies: dict[str, list[Reply]] = defaultdict(list)
        self.standing: dict[str, Reply] = {}
        self.seen: list[str] = []

    def keep(self, kind: str, reply: Reply | None) -> None:
        """Answer requests of `kind` with `reply` whenever its queue is empty (None: stop), like a model that
        keeps answering the same way however often it is asked."""
        if reply is None:
            self.standing.pop(kind, None)
        else:
            self.standing[kind] = reply

    def add(self, kind: str, *replies: Reply) -> None:
        """Queue replies for one kind of request (chat, profile, todo, instructions, or another kind's schema name)."""
        self.replies[kind].extend(replies)

    def remaining(self) -> dict[str, int]:
        """How many queued replies each kind has not used yet."""
        return {kind: len(replies) for kind, replies in self.replies.items() if replies}

    def __call__(self, request: dict) -> Outcome:
        """Answer a request with the next reply queued for its kind."""
        kind = kind_of(request)
        self.seen.append(kind)
        if self.replies[kind]:
            reply = self.replies[kind].pop(0)
        elif kind in self.standing:
            reply = self.standing[kind]
        else:
            return StubError(500, f"no scripted reply for {kind}")
        return reply(request) if callable(reply) else reply


def route(*kinds: str) -> Callable[[dict], dict]:
    """A JSON routing answer (to a "route" request) saying "yes" for the given update types, "no" for the rest."""

    def answer(request: dict) -> dict:
        fields = json_schema(request)["schema"]["properties"]
        return json_reply({field: "yes" if field in kinds else "no" for field in fields})

    return answer


def update(*kinds: str, content: str | None = None) -> dict:
    """A chat reply calling UpdateMemory once per given update_type, with `content` as its text (the reply given
    first) when given."""
    return {**tool_calls_reply(*((UPDATE_TOOL, {"update_type": kind}) for kind in kinds)), "content": content}

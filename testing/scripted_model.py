"""A scripted chat model for tests, benchmarks and the key-free demo: per-node scripts, every call recorded.

langchain_core's fake chat models cannot `bind_tools`; this one can. Replies are looked up by the
top-level graph node that makes the call (`task_maistro`, `update_todos`, …), so parallel branches get
their own replies whatever order they run in. A reply is an `AIMessage` or a function of the prompt
(`(messages, tool_names) -> AIMessage`), which lets a script read document ids from trustcall's prompt
the way a real model does.
"""

import itertools
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from graph.names import AGENT_NAME
from graph.text_tokens import count_text_tokens
from graph.thread.model_message import REMIND_TOOL, UPDATE_TOOL
from graph.thread.tokens import count_tokens

Reply = Union[Callable[[Sequence[BaseMessage], list[str]], AIMessage], AIMessage]


class ScriptExhausted(AssertionError):
    """The graph made a model call the script did not plan for."""


@dataclass
class ModelCall:
    """One recorded model call."""

    node: str
    messages: list[BaseMessage]
    tools: list[dict]
    reply: AIMessage
    task: str
    requested: int
    answered: int

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools bound for the call."""
        return [tool["function"]["name"] for tool in self.tools]

    @property
    def prompt_tokens(self) -> int:
        """Estimated prompt tokens of the call: its messages plus the tool schemas sent with them."""
        return count_tokens(self.messages) + count_text_tokens(json.dumps(self.tools, ensure_ascii=False))

    @property
    def system(self) -> str:
        """The text of the call's system messages, joined by a blank line ("" if none): the chat prompt's stable part
        and its context block (the time and the memories, right before the user's latest message)."""
        return "\n\n".join(message.text for message in self.messages if isinstance(message, SystemMessage))


class ScriptedChatModel(BaseChatModel):
    """Answers from `script[node]` in order, then from `standing[node]`; `latency` seconds per call."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: dict[str, list[Any]] = Field(default_factory=dict)  # lists of Reply
    standing: dict[str, Any] = Field(default_factory=dict)  # Reply by node
    calls: list[ModelCall] = Field(default_factory=list)
    latency: float = 0.0
    lock: Any = Field(default_factory=threading.Lock, exclude=True)
    events: Any = Field(default_factory=itertools.count, exclude=True)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        """Bind tools like a real provider does, in OpenAI format."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def add(self, node: str, *replies: Reply) -> None:
        """Append replies to a node's script."""
        with self.lock:
            self.script.setdefault(node, []).extend(replies)

    def remaining(self) -> dict[str, int]:
        """How many scripted replies each node has not used yet."""
        return {node: len(replies) for node, replies in self.script.items() if replies}

    def calls_in(self, node: str) -> list[ModelCall]:
        """The recorded calls made by one node."""
        return [call for call in self.calls if call.node == node]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        task = _calling_task(run_manager)
        node = task.split(":", 1)[0] or "unknown"
        tools = list(kwargs.get("tools") or [])
        tool_names = [tool["function"]["name"] for tool in tools]
        with self.lock:
            requested = next(self.events)
            queue = self.script.get(node) or []
            if queue:
                reply = queue.pop(0)
            elif node in self.standing:
                reply = self.standing[node]
            else:
                raise ScriptExhausted(f"no scripted reply left for node {node!r}")
        if self.latency:
            time.sleep(self.latency)
        message = reply(messages, tool_names) if callable(reply) else reply
        message = message.model_copy(update={"id": message.id or f"scripted-{uuid.uuid4()}"})
        with self.lock:
            self.calls.append(ModelCall(node, list(messages), tools, message, task, requested, next(self.events)))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _calling_task(run_manager: CallbackManagerForLLMRun | None) -> str:
    """The top-level graph task making the call, `node:task_id` (trustcall's own subgraph steps stripped)."""
    metadata = run_manager.metadata if run_manager else {}
    namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns") or ""
    return namespace.split("|", 1)[0]


def sequential_calls(calls: Sequence[ModelCall], chat_node: str = AGENT_NAME) -> int:
    """The longest chain of calls that waited for one another, from the order of requests and answers.

    A call waits for the answered calls before it in its own graph task, and whatever comes before or after
    the chat node waits for it; calls of two update tasks never wait for each other, since only the chat node
    starts update tasks, all of one message's at once. Counted this way, a busy machine that happens to run
    two parallel branches one after the other does not change the figure.
    """
    ordered = sorted(calls, key=lambda call: call.requested)
    chain = [1] * len(ordered)
    for i, call in enumerate(ordered):
        for j, earlier in enumerate(ordered[:i]):
            waits = earlier.task == call.task or chat_node in (earlier.node, call.node)
            if waits and earlier.answered < call.requested:
                chain[i] = max(chain[i], chain[j] + 1)
    return max(chain, default=0)


def _call(name: str, args: dict, call_id: str | None = None) -> dict:
    return {"name": name, "args": args, "id": call_id or f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}


def say(text: str) -> AIMessage:
    """A plain text reply."""
    return AIMessage(content=text)


def route(*update_types: str, content: str = "") -> AIMessage:
    """A chat reply calling UpdateMemory once per given update_type."""
    return AIMessage(content=content, tool_calls=[_call(UPDATE_TOOL, {"update_type": t}) for t in update_types])


def remind(schedule: str, message: str = "", content: str = "", *routed: str) -> AIMessage:
    """A chat reply calling Remind with `schedule` and `message` (beside UpdateMemory once per `routed` type)."""
    reminder = _call(REMIND_TOOL, {"schedule": schedule, "message": message})
    return AIMessage(content=content, tool_calls=[reminder, *(_call(UPDATE_TOOL, {"update_type": t}) for t in routed)])


def calls(*tool_calls: dict) -> AIMessage:
    """A reply made of the given tool calls (see `todo`, `profile`, `patch`, `remove`)."""
    return AIMessage(content="", tool_calls=list(tool_calls))


def document(schema: str, **fields: Any) -> dict:
    """A tool call creating a new document of the schema named `schema` (any memory kind's)."""
    return _call(schema, fields)


def todo(task: str, **fields: Any) -> dict:
    """A tool call creating a new ToDo."""
    return _call("ToDo", {"task": task, **fields})


def profile(**fields: Any) -> dict:
    """A tool call creating the Profile document."""
    return _call("Profile", fields)


def patch(doc_id: str, *operations: dict, planned_edits: str = "Apply the user's change.") -> dict:
    """A trustcall PatchDoc call with JSON patch operations."""
    return _call("PatchDoc", {"json_doc_id": doc_id, "planned_edits": planned_edits, "patches": list(operations)})


def remove(doc_id: str) -> dict:
    """A trustcall RemoveDoc call."""
    return _call("RemoveDoc", {"json_doc_id": doc_id})


def replace(path: str, value: Any) -> dict:
    """A JSON patch `replace` operation."""
    return {"op": "replace", "path": path, "value": value}


def add(path: str, value: Any) -> dict:
    """A JSON patch `add` operation."""
    return {"op": "add", "path": path, "value": value}


_INSTANCE = re.compile(r'<instance id=(?P<id>\S+) schema_type="(?P<schema>[^"]+)">\n(?P<doc>.*?)\n</instance>', re.S)


def documents_in_prompt(text: str) -> dict[str, str]:
    """Document ids and texts that trustcall put into a prompt's text (`<instance id=…>` blocks)."""
    return {match["id"]: match["doc"] for match in _INSTANCE.finditer(text)}


def existing_ids(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Document ids and texts that trustcall put into the prompt, as a model sees them."""
    return documents_in_prompt("\n".join(m.text for m in messages))


def doc_id_of(messages: Sequence[BaseMessage], needle: str) -> str:
    """The id of the one existing document in the prompt whose text contains `needle`."""
    found = [doc_id for doc_id, doc in existing_ids(messages).items() if needle in doc]
    assert len(found) == 1, f"{needle!r} matches {len(found)} documents in the prompt"
    return found[0]


def patch_where(needle: str, *operations: dict) -> Reply:
    """A reply patching the document whose text in the prompt contains `needle`."""
    return lambda messages, _tools: calls(patch(doc_id_of(messages, needle), *operations))


def remove_where(needle: str) -> Reply:
    """A reply removing the document whose text in the prompt contains `needle`."""
    return lambda messages, _tools: calls(remove(doc_id_of(messages, needle)))

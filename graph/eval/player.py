"""Scripted players: models that play an eval case from the case's own `play` data, right or with one flaw.

The oracle plays every turn as the case says a correct model does, but only with what a real model would have:
the tools the request offers, the documents trustcall put into the prompt (it patches or removes a ToDo only
if it sees it), and the memories in the prompt (a reply mentions a fact only if the prompt holds it). A flawed
player is the oracle with one mistake (`FLAWS`). Both read a request as a `PromptView`, made from LangChain
messages (`PlayerChatModel`, in process) or from an OpenAI request body (`respond_to_openai`, for a
local OpenAI-compatible endpoint), so the same player drives the graph either way.
"""

import ast
import json
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict

from graph.eval.cases import Case, Play, TodoFields, Turn
from graph.eval.dates import cron_dates, resolve_date
from graph.memory.source_lines import asks_for_source
from graph.thread.model_message import REMIND_TOOL, UPDATE_TOOL

FLAWS = {
    "never-routes": "never calls UpdateMemory: it only chats",
    "duplicate-inserts": "writes every new ToDo twice",
    "ignores-deletions": "never removes a ToDo the user no longer needs",
    "wrong-language": "always replies in English",
    "stores-secret": "writes the secret the user mentioned into the memory it updates",
    "invents-source": "asked where a memory came from, makes up a source instead of quoting the one it was given",
    "ignores-notes": "overlooks the notes the prompt adds below a list (stale ToDos, the done log's counts)",
    "text-tool-calls": "writes its UpdateMemory calls as text, the whole reply <tool_call>…</tool_call> blocks (Hermes, "
    "Qwen), instead of calling the tool",
    "recreates-updates": "changes a ToDo by removing it and adding a new one with the change made, instead of patching it",
    "server-clock": "counts relative dates and what is due from the server's date (UTC), not the user's message time "
    "in their zone",
    "never-reminds": "promises a reminder in words but never calls Remind",
}
PLAYERS = ("oracle", *FLAWS)
CHAT_MARKER = "helping them keep track of their ToDo list"
INSTRUCTIONS_MARKER = "update your instructions for how to update ToDo list items"
REPLY_FIRST_MARKER = "in the same message as any UpdateMemory calls"
ENGLISH_REPLY = "Okay, noted."
# What a player that invents sources says the user told it.
INVENTED_SOURCE = "You mentioned it when we first talked."
# What an extraction answered in text says (a turn whose play is `unusable`).
UNUSABLE_ANSWER = "Sure, I have saved that for you."
# The user's today as the prompts give it (the chat context and the extraction instructions), and the chat
# context's week (`prompts.WEEK_LINE`) and ToDo lines (`graph.memory.formats.todo_line`).
_PROMPT_TODAY = re.compile(r"Current date and time: (\d{4}-\d{2}-\d{2})")
_WEEK_END = re.compile(r"to Sunday (\d{4}-\d{2}-\d{2})\.")
_TODO_LINE = re.compile(r"^- (?P<task>[^|\n]+?) \| (?P<due>overdue since|due today|due) (?P<deadline>\S+) \|", re.M)
# How the lines the chat prompt adds below a list start (`graph.memory.context.turn_notes`): what "ignores-notes" skips.
NOTE_STARTS = ("Stale ", "Done log (")
# The done log's line (`graph.memory.done_log.log_line`): its counts by month ("2026-11: 4"), and the total.
_DONE_LOG = re.compile(r"^Done log \([^)]*\): (?P<recent>.*?)\. (?P<total>[\d,]+) in all since", re.M)
_DONE_MONTH = re.compile(r"(\d{4}-\d{2}): ([\d,]+)")
_INSTANCE = re.compile(r'<instance id=(?P<id>\S+) schema_type="(?P<schema>[^"]+)">\n(?P<doc>.*?)\n</instance>', re.S)


@dataclass(frozen=True)
class PromptView:
    """What a player reads from a request: the messages as (role, text), the tools offered, whether parallel
    tool calls are allowed, and the UpdateMemory calls made since the user's latest message."""

    messages: list[tuple[str, str]]
    tools: list[str]
    parallel: bool = True
    routed: list[str] = field(default_factory=list)

    @property
    def system(self) -> str:
        """The text of the system messages."""
        return "\n".join(text for role, text in self.messages if role == "system")

    @property
    def user_messages(self) -> list[str]:
        """What the user said, latest first (an update node's own request to the model comes first)."""
        return [text for role, text in reversed(self.messages) if role == "user"]

    @property
    def latest_user(self) -> str:
        """The user's latest message ("" if none)."""
        return next(iter(self.user_messages), "")

    @property
    def after_user(self) -> bool:
        """Whether the last message is the user's (the turn has just started)."""
        return bool(self.messages) and self.messages[-1][0] == "user"

    @property
    def context(self) -> str:
        """Everything the prompt shows before the user's latest message: memories and earlier conversation."""
        last_user = max((i for i, (role, _) in enumerate(self.messages) if role == "user"), default=len(self.messages))
        return "\n".join(text for _, text in self.messages[:last_user])

    def documents(self, schema: str) -> dict[str, str]:
        """The documents of `schema` trustcall put into the prompt: id → text (a Python dict's repr)."""
        text = "\n".join(text for _, text in self.messages)
        return {m["id"]: m["doc"] for m in _INSTANCE.finditer(text) if m["schema"] == schema}


@dataclass(frozen=True)
class Move:
    """A player's answer: text and tool calls (name, arguments)."""

    text: str = ""
    calls: list[tuple[str, dict]] = field(default_factory=list)


def _found(fact: str | list[str], text: str) -> str | None:
    """The first alternative of `fact` that `text` contains (case-insensitive), or None."""
    options = [fact] if isinstance(fact, str) else fact
    return next((option for option in options if option.casefold() in text.casefold()), None)


@dataclass(frozen=True)
class Player:
    """Plays one case (`flaw` None: correctly) on `today`; `move` answers any request the graph makes."""

    case: Case
    today: date
    flaw: str | None = None

    def turn(self, view: PromptView) -> Turn | None:
        """The case's turn the request is about: the latest user message that is one of the case's."""
        turns = {turn.user: turn for turn in self.case.turns}
        return next((turns[text] for text in view.user_messages if text in turns), None)

    def move(self, view: PromptView) -> Move:
        """The answer to one request: a chat reply, a trustcall extraction or the new instructions."""
        turn = self.turn(view)
        if turn is None:
            return Move("OK.")
        if UPDATE_TOOL in view.tools or (CHAT_MARKER in view.system and INSTRUCTIONS_MARKER not in view.system):
            return self.chat(turn, view)
        if turn.play.unusable:
            return Move(UNUSABLE_ANSWER)
        if "ToDo" in view.tools or view.documents("ToDo"):
            return self.todos(turn.play, view)
        if "Profile" in view.tools or view.documents("Profile"):
            return self.profile(turn.play, view)
        if INSTRUCTIONS_MARKER in view.system:
            return Move(self._secretive(turn.play, turn.play.instructions or ""))
        return Move("The user and the assistant talked about the user's ToDo list.")

    def reply(self, turn: Turn, view: PromptView) -> str:
        """The turn's reply, with each fact it must mention that the prompt's memories or conversation hold."""
        text = ENGLISH_REPLY if self.flaw == "wrong-language" else turn.play.reply
        if self.flaw == "invents-source" and asks_for_source(turn.user):
            return f'{text} "{INVENTED_SOURCE}"'
        if turn.play.due:
            return " ".join([text, *self.due_tasks(turn.play.due, view)])
        context = view.context
        if self.flaw == "ignores-notes":
            context = "\n".join(line for line in context.splitlines() if not line.startswith(NOTE_STARTS))
        if turn.play.done:
            return " ".join([text, *self.done_count(turn.play.done, context, view)])
        facts = [found for fact in turn.mention if (found := _found(fact, context))]
        return " ".join([text, *facts])

    def done_count(self, window: str, context: str, view: PromptView) -> list[str]:
        """How many ToDos the done log line in `context` says were finished last month (the month before the
        prompt's today) or in all, as the one word of a list; none when the context has no such line or count."""
        found = _DONE_LOG.search(context)
        if found is None:
            return []
        if window == "all":
            return [found["total"]]
        today = self.today_of(view)
        last = date(today.year - (today.month == 1), (today.month - 2) % 12 + 1, 1).strftime("%Y-%m")
        months = dict(_DONE_MONTH.findall(found["recent"]))
        return [months[last]] if last in months else []

    def today_of(self, view: PromptView) -> date:
        """The day relative dates count from: the user's, as the prompt gives it (the run's when it gives none); the
        server's date (the run's today) for the server-clock flaw."""
        if self.flaw == "server-clock":
            return self.today
        found = _PROMPT_TODAY.search("\n".join(text for _, text in view.messages))
        return date.fromisoformat(found[1]) if found else self.today

    def due_tasks(self, window: str, view: PromptView) -> list[str]:
        """The open ToDos the prompt shows as due today (overdue ones included) or this week: by the prompt's markers
        and week; for the server-clock flaw, by each deadline's UTC date against the server's date and week."""
        rows = list(_TODO_LINE.finditer(view.context))
        if self.flaw == "server-clock":
            last = self.today if window == "today" else self.today + timedelta(days=6 - self.today.weekday())
            dates = {row["task"]: datetime.fromisoformat(row["deadline"]).astimezone(timezone.utc).date() for row in rows}
            return [task for task, day in dates.items() if day <= last]
        if window == "today":
            return [row["task"] for row in rows if row["due"] != "due"]
        week_end = _WEEK_END.search(view.context)
        last = date.fromisoformat(week_end[1]) if week_end else self.today_of(view)
        return [row["task"] for row in rows if datetime.fromisoformat(row["deadline"]).date() <= last]

    def chat(self, turn: Turn, view: PromptView) -> Move:
        """The chat node: route the turn's updates not made yet (one at a time without parallel calls), else answer."""
        needed = [t for t in turn.play.update_types if t not in view.routed]
        reminders = self.reminders(turn, view)
        if not (needed or reminders) or UPDATE_TOOL not in view.tools or self.flaw == "never-routes":
            return Move(self.reply(turn, view))
        needed = needed if view.parallel else needed[:1]
        text = self.reply(turn, view) if REPLY_FIRST_MARKER in view.system else ""
        calls = [*reminders, *((UPDATE_TOOL, {"update_type": t}) for t in needed)]
        if self.flaw == "text-tool-calls":  # the reply is the calls: it says something once they are answered
            return Move("\n".join(f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>' for name, args in calls))
        return Move(text, calls)

    def reminders(self, turn: Turn, view: PromptView) -> list[tuple[str, dict]]:
        """The turn's `Remind` call, on its first chat request, when the graph offers the tool (not for the
        never-reminds flaw)."""
        remind = turn.play.remind
        if remind is None or REMIND_TOOL not in view.tools or not view.after_user or self.flaw == "never-reminds":
            return []
        return [(REMIND_TOOL, {"schedule": cron_dates(remind.schedule, self.today_of(view)), "message": remind.message})]

    def _secretive(self, play: Play, text: str) -> str:
        """`text`, with the turn's secret appended when this player stores secrets."""
        return f"{text} ({play.secret})" if self.flaw == "stores-secret" and play.secret and text else text

    def profile(self, play: Play, view: PromptView) -> Move:
        """Profile extraction: patch the existing profile, or create it."""
        fields = dict(play.profile or {})
        written = next((name for name, value in fields.items() if isinstance(value, str)), None)
        if written:
            fields[written] = self._secretive(play, fields[written])
        if not fields:
            return Move()
        existing = list(view.documents("Profile"))
        if existing and "PatchDoc" in view.tools:
            operations = [{"op": "replace", "path": f"/{name}", "value": value} for name, value in fields.items()]
            return Move(calls=[_patch(existing[0], operations)])
        return Move(calls=[("Profile", fields)])

    def todo_document(self, todo: TodoFields, play: Play, view: PromptView) -> dict[str, Any]:
        """A new ToDo as the model writes it: dates resolved against today, at least one solution."""
        document = todo.model_dump()
        document["task"] = self._secretive(play, todo.task)
        document["deadline"] = self.deadline(todo.deadline, view)
        document["solutions"] = todo.solutions or [todo.task]
        return document

    def deadline(self, spec: str | None, view: PromptView) -> str | None:
        """A case's date as the model writes it, a date alone (by the end of that day where the user is), counted
        from the prompt's today (`today_of`); or None."""
        return resolve_date(spec, self.today_of(view)).isoformat() if spec else None

    def todos(self, play: Play, view: PromptView) -> Move:
        """ToDo extraction: add, patch and remove as the turn says, on the documents the prompt shows."""
        todos = play.todos
        if todos is None:
            return Move()
        documents = view.documents("ToDo")
        calls: list[tuple[str, dict]] = []
        for change in todos.update:
            values = {name: self.deadline(value, view) if name == "deadline" else value for name, value in change.set.items()}
            if self.flaw == "recreates-updates" and {"RemoveDoc", "ToDo"} <= set(view.tools):
                calls += [
                    call
                    for doc_id in _matching(documents, change.match)
                    for call in (("RemoveDoc", {"json_doc_id": doc_id}), ("ToDo", {**ast.literal_eval(documents[doc_id]), **values}))
                ]
                continue
            operations = [{"op": "replace", "path": f"/{name}", "value": value} for name, value in values.items()]
            calls += [_patch(doc_id, operations) for doc_id in _matching(documents, change.match)]
        if "RemoveDoc" in view.tools and self.flaw != "ignores-deletions":
            calls += [("RemoveDoc", {"json_doc_id": doc_id}) for task in todos.remove for doc_id in _matching(documents, task)]
        if "ToDo" in view.tools:
            copies = 2 if self.flaw == "duplicate-inserts" else 1
            calls += [("ToDo", self.todo_document(todo, play, view)) for todo in todos.add for _ in range(copies)]
        return Move(calls=calls)


def _matching(documents: dict[str, str], needle: str) -> list[str]:
    """The ids of the documents whose text contains `needle` (case-insensitive)."""
    return [doc_id for doc_id, doc in documents.items() if needle.casefold() in doc.casefold()]


def _patch(doc_id: str, operations: list[dict]) -> tuple[str, dict]:
    return ("PatchDoc", {"json_doc_id": doc_id, "planned_edits": "Apply the user's change.", "patches": operations})


def view_of_messages(messages: Sequence[BaseMessage], tools: list[str], parallel: bool = True) -> PromptView:
    """A `PromptView` of LangChain messages."""
    roles = {SystemMessage: "system", HumanMessage: "user", AIMessage: "assistant", ToolMessage: "tool"}
    pairs = [(next((r for t, r in roles.items() if isinstance(m, t)), "other"), m.text) for m in messages]
    last_user = max((i for i, (role, _) in enumerate(pairs) if role == "user"), default=-1)
    routed = [
        call["args"].get("update_type", "")
        for message in messages[last_user + 1 :]
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["name"] == UPDATE_TOOL
    ]
    return PromptView(pairs, tools, parallel, routed)


def _openai_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def view_of_openai_request(body: dict) -> PromptView:
    """A `PromptView` of an OpenAI Chat Completions request body."""
    roles = {"developer": "system"}
    messages = body.get("messages") or []
    pairs = [(roles.get(m.get("role"), m.get("role", "")), _openai_text(m.get("content"))) for m in messages]
    last_user = max((i for i, (role, _) in enumerate(pairs) if role == "user"), default=-1)
    routed = []
    for message in messages[last_user + 1 :]:
        for call in message.get("tool_calls") or []:
            if call.get("function", {}).get("name") == UPDATE_TOOL:
                routed.append(json.loads(call["function"].get("arguments") or "{}").get("update_type", ""))
    tools = [tool["function"]["name"] for tool in body.get("tools") or [] if tool.get("type") == "function"]
    return PromptView(pairs, tools, body.get("parallel_tool_calls") is not False, routed)


def respond_to_openai(players: Callable[[PromptView], Player | None], body: dict) -> dict:
    """The answer of the player `players` picks for an OpenAI request, as `{"content", "tool_calls"}` in the
    OpenAI message format (`testing/openai_stub.py` serves it)."""
    view = view_of_openai_request(body)
    player = players(view)
    move = player.move(view) if player else Move("OK.")
    tool_calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:16]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        for name, args in move.calls
    ]
    return {"content": move.text or (None if tool_calls else ""), "tool_calls": tool_calls}


def suite_players(cases: Sequence[Case], today: date, flaw: str | None = None) -> Callable[[PromptView], Player | None]:
    """Finds the player of the case a request belongs to, by the user's latest message (unique in the suite)."""
    by_message = {turn.user: Player(case, today, flaw) for case in cases for turn in case.turns}
    return lambda view: next((by_message[text] for text in view.user_messages if text in by_message), None)


class PlayerChatModel(BaseChatModel):
    """A LangChain chat model whose answers are a `Player`'s moves (tool calls bound the way providers do)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    player: Any

    @property
    def _llm_type(self) -> str:
        return "eval-player"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        """Bind tools in OpenAI format (with `parallel_tool_calls` when given)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = [tool["function"]["name"] for tool in kwargs.get("tools") or []]
        move = self.player.move(view_of_messages(messages, tools, kwargs.get("parallel_tool_calls") is not False))
        calls = [{"name": n, "args": a, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"} for n, a in move.calls]
        message = AIMessage(content=move.text, tool_calls=calls, id=f"player-{uuid.uuid4()}")
        prompt = count_tokens_approximately(messages)
        completion = count_tokens_approximately([message])
        message.usage_metadata = {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}
        return ChatResult(generations=[ChatGeneration(message=message)])

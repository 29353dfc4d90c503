"""The boundary where the model's message enters the thread: whatever it sent, what is stored is a valid message.

Models other than OpenAI's (small local ones most) misbehave with tools in well-known ways; `normalise_reply`
mends each of them once, right after the model call, so nothing after it has to:

- a reply that writes the chat template's turn markers out (`<|im_end|>\n<|im_start|>user…`, a base model going
  on as the user) ends before the first one (`graph.thread.turn_markers`); a reply that is only markers is empty;
- a reply that *is* a call written as text, in a known format (`graph.thread.text_calls`: the whole reply, or a
  format's markers at its start), becomes real calls and no text; a reply that quotes a call (in prose, a fence,
  inline code) keeps its text whole and nothing of it runs: the user is told the quoted call was not run
  (`notes`) when it would have named a memory;
- malformed JSON arguments (langchain's `invalid_tool_calls`) are mended with json-repair and then validated
  like any call; a call that does not validate stays in the message (with what could be read) and is answered
  as refused, so a strict server always finds the answer it wants (langchain-openai sends invalid calls too);
- near-miss routing values ("todos", "ToDo", "profile", "instruction") become the update type of the memory
  kind they obviously name (`update_type_for`); a tool or update type that names nothing is refused with an
  answer, once;
- arguments past the bounds of `graph.thread.bounded_json` (longer, or nested deeper) are refused as malformed:
  model text is read in linear time, and nothing a parser or json-repair raises leaves the boundary;
- missing, empty and repeated call ids (in the message or anywhere in the thread) get fresh unique ids.

`sendable_message` applies the protocol part of this (ids, invalid calls) to messages already stored, so
threads written before this boundary existed are mended on their next turn.
"""

import re
import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, ToolMessage

from graph.memory.kinds import MemoryKind, kind_for_update
from graph.thread.bounded_json import MAX_JSON_DEPTH, NOT_JSON, TOO_DEEP, Reading, read_json, value_depth
from graph.thread.text_calls import NOT_AN_OBJECT, TextCall, quoted_calls, written_calls
from graph.thread.turn_markers import cut_at_turn_marker
from prompts import (
    INVALID_UPDATE_ANSWER,
    MALFORMED_CALL_ANSWER,
    QUOTED_CALL_NOTE,
    REFUSED_MALFORMED_NOTE,
    REFUSED_UNKNOWN_TOOL_NOTE,
    REFUSED_UPDATE_TYPE_NOTE,
    UNKNOWN_TOOL_ANSWER,
)

# The memory tool's name, as the chat node offers it to the model (graph.nodes.chat) and a model calls it.
UPDATE_TOOL = "UpdateMemory"
# The tool the chat model calls to schedule a reminder (graph.nodes.remind checks and runs it).
REMIND_TOOL = "Remind"


@dataclass(frozen=True)
class Refusal:
    """A call of the model's message that cannot run: its answer (for the model) and a note (for the user)."""

    answer: ToolMessage
    note: str


@dataclass(frozen=True)
class NormalisedReply:
    """The model's message as the thread stores it, the refusals that answer its calls that cannot run, and notes
    for the user that answer no call (a quoted call that was not run).

    `mended` names what was mended, for the log and the tests (e.g. "text call", "fresh id").
    """

    message: AIMessage
    refusals: list[Refusal] = field(default_factory=list)
    mended: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _word_forms(word: str) -> set[str]:
    """A name compared loosely: lower case, letters and digits only, with and without a plural ending."""
    plain = re.sub(r"[^0-9a-z]", "", word.casefold())
    return {plain, plain.removesuffix("s"), plain.removesuffix("es")} - {""}


def update_type_for(kinds: Iterable[MemoryKind], value: object) -> str | None:
    """The update type of the one memory kind that `value` names, exactly or as an obvious near miss: in any case,
    plural or singular, by the kind's name, label, title or update type ("profile" → "user", "ToDos" → "todo",
    "instruction" → "instructions"); None when it names none, or more than one."""
    kinds = tuple(kinds)
    if not isinstance(value, str):
        return None
    if any(kind.update_type == value for kind in kinds):
        return value
    forms = _word_forms(value)
    named = {
        kind.update_type
        for kind in kinds
        if any(forms & _word_forms(name) for name in (kind.update_type, kind.name, kind.label, kind.title))
    }
    return named.pop() if len(named) == 1 else None


def is_update_tool(name: object) -> bool:
    """Whether a tool name is UpdateMemory's, however the model spelled it ("update_memory", "updatememory")."""
    return isinstance(name, str) and _word_forms(name) & _word_forms(UPDATE_TOOL) != set()


def fresh_call_id() -> str:
    """A new tool-call id, in OpenAI's style."""
    return f"call_{uuid.uuid4().hex[:24]}"


def read_arguments(arguments: object) -> Reading:
    """The arguments of a malformed call as json-repair mends them (trailing commas, single quotes, cut short),
    within the bounds of `graph.thread.bounded_json`; a value that is not a JSON object is a problem too."""
    if isinstance(arguments, dict):
        return Reading(arguments)
    reading = read_json(arguments, mend=True) if isinstance(arguments, str) else Reading(problem=NOT_JSON)
    return reading if reading.problem or isinstance(reading.value, dict) else Reading(problem=NOT_AN_OBJECT)


class _Boundary:
    """The normalisation of one message: the kinds it may route to and the call ids already taken."""

    def __init__(self, kinds: Sequence[MemoryKind], taken_ids: Collection[str]) -> None:
        self.kinds = tuple(kinds)
        self.taken = set(taken_ids)
        self.refusals: list[Refusal] = []
        self.mended: list[str] = []
        self.notes: list[str] = []

    def call_id(self, call_id: object) -> str:
        """The id a call keeps, or a fresh one when it has none, an empty one or one already used."""
        if isinstance(call_id, str) and call_id and call_id not in self.taken:
            self.taken.add(call_id)
            return call_id
        self.mended.append("fresh id")
        fresh = fresh_call_id()
        self.taken.add(fresh)
        return fresh

    def update_type(self, name: object, args: dict) -> str | None:
        """The update type of the memory a call names (near misses mended), or None when it names none."""
        return update_type_for(self.kinds, args.get("update_type")) if is_update_tool(name) else None

    def routed(self, name: object, args: dict) -> dict | None:
        """A call's name and arguments as UpdateMemory takes them (a `Remind` call as it came: `graph.nodes.remind`
        checks it), or None when they do not name a memory."""
        if name == REMIND_TOOL:
            return {"name": REMIND_TOOL, "args": args}
        update_type = self.update_type(name, args)
        if update_type is None:
            return None
        if update_type != args.get("update_type") or name != UPDATE_TOOL:
            self.mended.append("near-miss routing")
        return {"name": UPDATE_TOOL, "args": {**args, "update_type": update_type}}

    def refuse(self, call_id: str, answer: str, note: str) -> None:
        self.refusals.append(Refusal(ToolMessage(content=answer, tool_call_id=call_id, status="error"), note))

    def tool_call(self, name: object, args: dict, call_id: object) -> dict:
        """The call as stored: routed when it can be, else kept as sent and refused with an answer; arguments
        nested past MAX_JSON_DEPTH (no checkpoint stores them) are refused as malformed."""
        call_id = self.call_id(call_id)
        if value_depth(args) > MAX_JSON_DEPTH:
            return self.malformed(call_id, name, TOO_DEEP)
        if (routed := self.routed(name, args)) is not None:
            return {**routed, "id": call_id, "type": "tool_call"}
        shown_name = name if isinstance(name, str) and name else "unnamed"
        if not is_update_tool(name):
            self.refuse(call_id, UNKNOWN_TOOL_ANSWER.format(name=shown_name), REFUSED_UNKNOWN_TOOL_NOTE.format(name=shown_name))
        else:
            choices = ", ".join(repr(kind.update_type) for kind in self.kinds)
            value = args.get("update_type")
            self.refuse(
                call_id, INVALID_UPDATE_ANSWER.format(args=args, choices=choices), REFUSED_UPDATE_TYPE_NOTE.format(value=value)
            )
        return {"name": shown_name, "args": args, "id": call_id, "type": "tool_call"}

    def malformed(self, call_id: str, name: object, problem: str, error: str | None = "") -> dict:
        """A call whose arguments could not be read, kept with none and refused; `error` is what the model is told
        (default: the `problem`, which the user reads)."""
        self.refuse(call_id, MALFORMED_CALL_ANSWER.format(error=error or problem), REFUSED_MALFORMED_NOTE.format(problem=problem))
        return {"name": name if isinstance(name, str) and name else UPDATE_TOOL, "args": {}, "id": call_id, "type": "tool_call"}

    def invalid_call(self, call: dict) -> dict:
        """A call whose arguments were not valid JSON: mended when json-repair can (and then routed or refused like
        any call), else kept with no arguments and refused as malformed."""
        reading = read_arguments(call.get("args"))
        if not reading.problem:
            self.mended.append("repaired arguments")
            return self.tool_call(call.get("name"), reading.value, call.get("id"))
        error = call.get("error") if reading.problem == NOT_JSON else ""
        return self.malformed(self.call_id(call.get("id")), call.get("name"), reading.problem, error)

    def written_call(self, call: TextCall) -> dict:
        """A call the reply was written as: routed or refused like any call, or refused as malformed when it could
        not be read."""
        self.mended.append("text call")
        if call.args is None:
            return self.malformed(self.call_id(None), call.name, call.problem)
        return self.tool_call(call.name, call.args, None)

    def tell_quoted(self, quoted: Iterable[TextCall], calls: Sequence[dict]) -> None:
        """Tell the user that the calls a reply quotes were not run, those that would have updated a memory the
        message's own `calls` do not update."""
        refused = {refusal.answer.tool_call_id for refusal in self.refusals}
        updated = {call["args"].get("update_type") for call in calls if call["name"] == UPDATE_TOOL and call["id"] not in refused}
        named = (self.update_type(call.name, call.args) for call in quoted)
        titles = dict.fromkeys(
            kind_for_update(self.kinds, update_type).title for update_type in named if update_type not in {None, *updated}
        )
        if titles:
            self.notes.append(QUOTED_CALL_NOTE.format(memory=" and ".join(titles)))


def normalise_reply(message: AIMessage, kinds: Sequence[MemoryKind], taken_ids: Collection[str]) -> NormalisedReply:
    """The model's `message` made valid for the thread (see the module's docstring), given the memory `kinds` it
    may route to and the call ids the thread already holds (`taken_ids`)."""
    boundary = _Boundary(kinds, taken_ids)
    content = message.content
    written: list[TextCall] = []
    quoted: list[TextCall] = []
    if isinstance(content, str) and content and (cut := cut_at_turn_marker(content)) != content:
        content = cut
        boundary.mended.append("turn markers")
    if isinstance(content, str) and content:
        if (found := written_calls(content)) is None:
            quoted = list(quoted_calls(content))
        else:
            written, content = found, ""
            boundary.mended.append("reply written as calls")
    calls = [boundary.tool_call(call["name"], call["args"], call.get("id")) for call in message.tool_calls]
    calls += [boundary.invalid_call(call) for call in message.invalid_tool_calls]
    calls += [boundary.written_call(call) for call in written]
    boundary.tell_quoted(quoted, calls)
    if not boundary.mended and not boundary.refusals:
        return NormalisedReply(message, notes=boundary.notes)
    return NormalisedReply(_with_calls(message, content, calls), boundary.refusals, boundary.mended, boundary.notes)


def _with_calls(message: AIMessage, content: str | list, calls: list[dict]) -> AIMessage:
    """The message with `content` and exactly `calls` (the raw calls langchain-openai would also send are dropped)."""
    extra = {key: value for key, value in message.additional_kwargs.items() if key not in ("tool_calls", "function_call")}
    return message.model_copy(
        update={"content": content, "tool_calls": calls, "invalid_tool_calls": [], "additional_kwargs": extra}
    )


def sendable_message(message: AIMessage, taken_ids: Collection[str]) -> AIMessage:
    """A stored assistant message as a strict server accepts it: invalid calls kept as calls without arguments,
    and every call with an id of its own (`taken_ids`: ids earlier messages hold)."""
    calls = [*message.tool_calls, *message.invalid_tool_calls]
    ids = [call.get("id") for call in calls]
    repeated = any(not call_id or call_id in taken_ids or ids.count(call_id) > 1 for call_id in ids)
    if not message.invalid_tool_calls and not repeated:
        return message
    boundary = _Boundary((), taken_ids)
    valid = [{**call, "id": boundary.call_id(call.get("id"))} for call in message.tool_calls]
    # An old invalid call is not run now (its turn is over): it keeps no arguments and is answered as interrupted.
    invalid = [
        {"name": call.get("name") or UPDATE_TOOL, "args": {}, "id": boundary.call_id(call.get("id")), "type": "tool_call"}
        for call in message.invalid_tool_calls
    ]
    return _with_calls(message, message.content, [*valid, *invalid])

"""The update of a free-text kind (the instructions): the whole text rewritten with one model call, no trustcall.

The text is standing guidance that enters every prompt, and the model that rewrites it reads whatever the user
pasted, so the update checks what the model proposes, without asking a model:
- a text longer than the kind's `max_chars` is not saved (`NotSaved`), and the answer says how long it was;
- a change that adds words of something the user pasted or quoted (`graph.memory.own_words`: an e-mail, a
  fenced or `>`-quoted block, a long pasted paragraph, in any message of the conversation the update reads, or
  the thread's summary), words the user's own messages and the current text do not hold, is held as a proposal:
  not saved, shown in full with a code, and kept in the answer's artifact;
- a later update routed by a message whose own words hold that code saves exactly the proposal, without a model
  call, if the text is still what the proposal started from (exactly once, as every change: its history
  entries derive from the confirming call).
"""

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from graph.backends.model import model_errors, quiet
from graph.memory.changes import MemoryChange
from graph.memory.kinds import MemoryKind
from graph.memory.own_words import borrowed_words, named, split_message
from graph.memory.redaction import redact
from graph.memory.rendering import capitalized
from graph.memory.store import namespace
from graph.memory.text_diff import added_text, document_diff, text_of
from graph.nodes.extraction import UnusableOutputError, conversation, routing_seed
from graph.nodes.update import NotSaved, UpdateRequest
from graph.settings import current_settings
from graph.thread.turn_markers import cut_at_turn_marker
from prompts import (
    EMPTY_TEXT_PROBLEM,
    PROPOSAL_OUTDATED,
    TEXT_CHANGE_HELD,
    TEXT_REQUEST,
    TEXT_TOO_LONG,
    TEXT_UNCHANGED,
    TEXT_UPDATED,
)

# Tokens a text rewrite may take beyond its kind's most characters (a model may add a line before it is refused).
TEXT_TOKENS_MARGIN = 64
# How many hexadecimal digits a proposal's code has.
CODE_DIGITS = 6
# What the user sends to confirm a proposal, and what their note says of it.
CONFIRM = "confirm {code}"
HELD_PROBLEM = "the change adds words from text you pasted or quoted ({words}), not your own words"
OUTDATED_PROBLEM = "your {memory} changed after that proposal was made, so it no longer applies"


def propose_text(request: UpdateRequest) -> list[MemoryChange]:
    """The complete new text, asked of the model (ended before a chat-template turn marker it writes out, as a
    reply is; an unchanged text is dropped by the commit), or the proposal the user's latest message confirms;
    from a model that answers in JSON, only a text grounded in what the user said and the current text (else no
    change).

    Raises `UnusableOutputError` when the model answers with no text, and `NotSaved` when the text is too long,
    the change takes words from pasted or quoted text (held as a proposal), or a confirmed proposal no longer applies.
    """
    kind = request.kind
    current = request.store.get(namespace(kind, request.user_id), kind.key)
    before = current.value if current else None
    if (proposal := confirmed_proposal(request)) is not None:
        return confirmed_change(kind, proposal, before)
    instruction = kind.instruction.format(current=text_of(before), memory=kind.title, description=kind.description)
    prompt = [*request.prompt(instruction), HumanMessage(content=TEXT_REQUEST.format(memory=kind.title))]
    with model_errors():
        answer = quiet(request.model).invoke(prompt, request.config, max_tokens=text_tokens(kind))
        text = cut_at_turn_marker(answer.text).strip()
    if not text:
        raise UnusableOutputError(EMPTY_TEXT_PROBLEM)
    if request.answers_in_json and not request.user_words(text_of(before)).grounds(text):
        return []
    change = MemoryChange("updated" if before else "created", kind.key, before, kind.schema(memory=text).model_dump())
    check_length(kind, change)
    if words := borrowed(request, change):
        raise held(request, change, words)
    return [change]


def text_tokens(kind: MemoryKind) -> int:
    """The most tokens the rewrite of a free-text kind may take: MAISTRO_MAX_REPLY_TOKENS, or more when the kind's
    text may be longer (a token per character: Chinese takes about that many)."""
    return max(current_settings().max_reply_tokens, (kind.max_chars or 0) + TEXT_TOKENS_MARGIN)


def check_length(kind: MemoryKind, change: MemoryChange) -> None:
    """Raise `NotSaved` when the change's text is longer than the kind may hold."""
    if problem := kind.text_problem(text_of(change.after)):
        raise NotSaved(TEXT_TOO_LONG.format(memory=kind.title, problem=problem), problem)


def borrowed(request: UpdateRequest, change: MemoryChange) -> list[str]:
    """The words the change adds that come from text the user pasted or quoted in the conversation the update reads
    (or from the thread's summary, which the model wrote from all of it), not from their own words or the current
    text."""
    said = [split_message(message.text) for message in conversation(request.messages) if isinstance(message, HumanMessage)]
    own = [*(part.own for part in said), text_of(change.before)]
    quoted = [*(part.quoted for part in said), request.state.get("summary", "")]
    return borrowed_words(added_text(document_diff(change.before, change.after)), own, quoted)


def held(request: UpdateRequest, change: MemoryChange, words: list[str]) -> NotSaved:
    """The refusal that holds `change` (secrets redacted) as a proposal the user confirms with a code."""
    kind = request.kind
    shown = replace(change, after=redact(change.after)[0])
    seed = routing_seed(request.messages, request.calls[0]["id"])
    code = hashlib.sha256(f"{seed}\n{text_of(shown.after)}".encode()).hexdigest()[:CODE_DIGITS]
    confirm = CONFIRM.format(code=code)
    diff = "\n".join(document_diff(shown.before, shown.after))
    answer = TEXT_CHANGE_HELD.format(
        memory=kind.title, words=named(words), diff=diff, confirm=confirm, update_type=kind.update_type
    )
    proposal = {"key": shown.key, "before": shown.before, "after": shown.after, "code": code, "confirm": confirm,
                "words": words}
    return NotSaved(answer, HELD_PROBLEM.format(words=named(words)), proposal)


def confirmed_proposal(request: UpdateRequest) -> Mapping[str, Any] | None:
    """The proposal of this kind held earlier in the thread whose code the user's latest message sends in their own
    words (not in a part they pasted or quoted); None when it sends none."""
    messages = request.messages
    latest = max((i for i, message in enumerate(messages) if isinstance(message, HumanMessage)), default=None)
    if latest is None:
        return None
    sent = set(re.findall(rf"\b[0-9a-f]{{{CODE_DIGITS}}}\b", split_message(messages[latest].text).own.casefold()))
    for message in reversed(messages[:latest]):
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        proposal = artifact.get("proposal") if isinstance(artifact, dict) and artifact.get("kind") == request.kind.name else None
        if isinstance(proposal, dict) and proposal.get("code") in sent:
            return proposal
    return None


def confirmed_change(kind: MemoryKind, proposal: Mapping[str, Any], before: dict | None) -> list[MemoryChange]:
    """The change a confirmed proposal makes to the text stored now (`before`): none when it is saved already.

    The proposal is rebuilt from its text alone (the thread that holds it is data, not a document to trust);
    `NotSaved` when the text changed since the proposal was made, or the proposed text is too long.
    """
    after = kind.schema(memory=text_of(proposal.get("after"))).model_dump()
    if before == after:
        return []
    if before != proposal.get("before"):
        problem = OUTDATED_PROBLEM.format(memory=kind.title)
        raise NotSaved(PROPOSAL_OUTDATED.format(memory=kind.title), problem, pending=False)  # the chat says what to do
    change = MemoryChange("updated" if before else "created", kind.key, before, after)
    check_length(kind, change)
    return [change]


def report_text(request: UpdateRequest, saved: list[MemoryChange]) -> str:
    """Whether the text changed, and what was removed and added, in full."""
    memory = request.kind.title
    if not saved:
        return TEXT_UNCHANGED.format(memory=memory)
    diff = "\n".join(line for change in saved for line in document_diff(change.before, change.after))
    return TEXT_UPDATED.format(Memory=capitalized(memory), diff=diff)

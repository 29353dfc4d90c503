"""The answer-first benchmark's pure parts: the chore model replying beside its calls, and the targets' verdicts."""

import json

from bench.answer_first import CHIT_CHAT, ONE_MEMORY, TWO_MEMORIES, targets
from prompts import REPLY_AFTER_UPDATES_RULE, REPLY_FIRST_RULE
from testing.chore_endpoint import (
    ADD,
    CHIT_CHAT_REPLY,
    MOVED,
    REPLY_FIRST_CONFIRMATION,
    ChoreEndpoint,
)

UPDATE_MEMORY = {"type": "function", "function": {"name": "UpdateMemory", "parameters": {}}}


def chat_request(rule: str, text: str) -> dict:
    """A chat-node request whose system prompt carries `rule` as rule 5, for the user's `text`."""
    return {
        "model": "gpt-bench",
        "messages": [
            {"role": "system", "content": f"You are a helpful chatbot.\n\n5. {rule}"},
            {"role": "user", "content": text},
        ],
        "tools": [UPDATE_MEMORY],
    }


def update_types(reply: dict) -> list[str]:
    """The update_type of each UpdateMemory call in a reply."""
    return [json.loads(call["function"]["arguments"])["update_type"] for call in reply["tool_calls"]]


def test_the_chore_model_replies_beside_its_calls_only_when_asked_to_and_the_prompt_says_so():
    first = ChoreEndpoint(replies_first=True)
    two = first(chat_request(REPLY_FIRST_RULE, f"{MOVED}Oakland; {ADD}Book the dentist"))
    tutorial = first(chat_request(REPLY_AFTER_UPDATES_RULE, f"{ADD}Book the dentist"))
    unchanged = ChoreEndpoint()(chat_request(REPLY_FIRST_RULE, f"{ADD}Book the dentist"))

    assert (two["content"], update_types(two)) == (REPLY_FIRST_CONFIRMATION, ["user", "todo"])
    assert (tutorial["content"], update_types(tutorial)) == (None, ["todo"])
    assert (unchanged["content"], update_types(unchanged)) == (None, ["todo"])
    assert [r.kind for r in first.requests] == ["chat", "chat"]


def test_chit_chat_gets_a_reply_without_routing():
    reply = ChoreEndpoint(replies_first=True)(chat_request(REPLY_FIRST_RULE, "How are you today?"))

    assert (reply["content"], reply["tool_calls"]) == (CHIT_CHAT_REPLY, [])


def summary(first_token_ms: float, wall_calls: float = 1.0, sequential: int = 1, prompt_tokens: int = 700) -> dict:
    """The summarised figures of one turn that `targets` reads."""
    return {"first_token_ms": first_token_ms, "wall_calls": wall_calls, "sequential": sequential, "prompt_tokens": prompt_tokens}


def test_targets_are_met_by_answer_first_figures_and_missed_by_the_tutorial_flow():
    tutorial = {CHIT_CHAT: summary(310), ONE_MEMORY: summary(950, 3.1, 3, 1950), TWO_MEMORIES: summary(960, 3.1, 3, 2400)}
    first = {CHIT_CHAT: summary(312), ONE_MEMORY: summary(315, 2.0, 2, 1300), TWO_MEMORIES: summary(320, 2.1, 2, 1700)}

    assert all(check.met for check in targets({"first": first, "after_updates": tutorial}))
    missed = [check.name for check in targets({"first": tutorial, "after_updates": first}) if not check.met]
    assert len(missed) == 6
    assert "first reply token of a two-memory turn ≤ 1.3x the chit-chat turn's (first)" in missed

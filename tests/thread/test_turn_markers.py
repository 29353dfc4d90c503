"""The chat-template turn markers a model writes out: its reply ends before the first one, a quoted one is text."""

import time

import pytest
from langchain_core.messages import AIMessage

from graph import DEFAULT_MEMORY_KINDS, build_graph
from graph.thread.model_message import normalise_reply
from graph.thread.turn_markers import TURN_MARKERS, cut_at_turn_marker, streamable_part
from testing.helpers import instructions_of, turn
from testing.openai_stub import text_reply
from testing.stub_script import update


@pytest.mark.parametrize("marker", sorted({marker for markers in TURN_MARKERS.values() for marker in markers}))
def test_a_reply_ends_before_any_registered_marker(marker):
    assert cut_at_turn_marker(f"Hello Lance!\n{marker}user\nI also need milk.") == "Hello Lance!"


@pytest.mark.parametrize(
    "reply",
    [
        "ChatML ends a turn with `<|im_end|>`.",
        "A turn ends like this:\n```\n<|im_end|>\n<|im_start|>user\n```\nand the next one starts.",
    ],
    ids=["inline-code", "fence"],
)
def test_a_marker_quoted_in_code_is_text(reply):
    assert cut_at_turn_marker(reply) == reply


def test_inline_code_ends_with_its_line():
    assert cut_at_turn_marker("Don`t worry.\n<|im_end|>\n<|im_start|>user\nHi") == "Don`t worry."


def test_the_beginning_of_a_marker_is_held_back_while_the_reply_streams():
    assert streamable_part("Hello! <|im_") == "Hello! "
    assert streamable_part("Hello! <") == "Hello! "
    assert streamable_part("Hello! <b>bold</b>") == "Hello! <b>bold</b>"
    assert streamable_part("Hello!<|im_end|>\n<|im_start|>user") == "Hello!"


def test_a_call_written_as_text_before_the_markers_runs():
    reply = AIMessage('<tool_call>{"name": "UpdateMemory", "arguments": {"update_type": "todo"}}</tool_call><|im_end|>\n<|im_start|>user\nHi')

    normalised = normalise_reply(reply, DEFAULT_MEMORY_KINDS, ())

    assert [call["args"] for call in normalised.message.tool_calls] == [{"update_type": "todo"}]
    assert normalised.message.content == "" and "turn markers" in normalised.mended


def test_many_markers_and_backticks_are_read_in_linear_time():
    started = time.process_time()
    cut_at_turn_marker("`" * 200_000 + "<|im_end|>" * 50_000)
    assert time.process_time() - started < 1.0


def test_the_instructions_a_model_rewrites_end_before_its_turn_markers(stub, script, tmp_path):
    agent = build_graph(tmp_path)
    script.add("chat", update("instructions", content="Got it."))
    script.add("instructions", text_reply("Write every ToDo in Spanish.<|im_end|>\n<|im_start|>user\nAnd in French."))

    thread = turn(agent, "Please write every ToDo in Spanish.")

    assert instructions_of(agent) == "Write every ToDo in Spanish."
    assert thread[-1].content == "Got it." and not any("French" in message.text for message in thread)

"""The tool-call rule strict OpenAI-compatible servers enforce, as a test assertion."""

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage


def assert_tool_calls_answered(messages: Sequence[BaseMessage]) -> None:
    """Every assistant tool call is answered by the tool messages that directly follow it."""
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            following = []
            for later in messages[index + 1 :]:
                if not isinstance(later, ToolMessage):
                    break
                following.append(later.tool_call_id)
            expected = {call["id"] for call in message.tool_calls}
            assert expected <= set(following), f"unanswered tool calls {expected - set(following)}"

"""Tool calls for models without tool calling: asked for as JSON that a schema constrains (`response_format`).

llama.cpp offers tool calling only to chat templates with tool syntax, and small models on Ollama or vLLM may have
none; every one of those servers (and OpenAI) accepts `response_format: {"type": "json_schema", ...}` and
constrains the answer to the schema. `JsonCallModel` wraps the endpoint's `ChatOpenAI` and gives the agent what
it asks of a chat model, `bind_tools` and `tool_choice` included, by sending json_schema requests and turning
the JSON answers into tool calls, so the graph, its nodes and the model-output boundary
(`graph.thread.model_message`) work on ordinary `AIMessage`s with `tool_calls`:

- a call the model must make (`tool_choice` naming a tool, or "any"/"required" with one tool) is one request
  whose schema is the tool's arguments;
- calls the model may make (the chat node's `UpdateMemory`) are one small request about the user's latest message
  alone, with one field per choice ("yes"/"no" for each option of an `OptionsTool`, shown with its examples;
  else null or the tool's arguments), and then the reply, a plain-text request of its own (streamed): asked
  together, a small model's reply ran away inside the JSON. A user message already answered with calls gets only
  the reply.

Every schema sent is bounded (`bounded_schema`): a string at most `STRING_CHARS` characters, a list at most
`LIST_ITEMS` items (`NESTED_LIST_ITEMS` inside another list's items), no properties beyond the declared ones, so
a small model cannot run away inside it; the request's `max_tokens` is the longest answer the schema allows
(`answer_tokens`), so a model that fills every bound still answers JSON. An answer that is not JSON of the schema
(a server that ignored `response_format`, an answer cut at its token limit) becomes an invalid tool call, which
the boundary refuses and tells the user about.
"""

import copy
import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import add_usage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from prompts import (
    JSON_CALL_EXAMPLE,
    JSON_CALL_EXAMPLES,
    JSON_CALL_OPTION,
    JSON_CALL_TOOL,
    JSON_CALLS_REQUEST,
    JSON_NO_NEWS_EXAMPLE,
)

# The bounds `bounded_schema` gives every string and list that has none of its own (or a looser one): a list inside
# a list's items gets fewer, since its items multiply.
STRING_CHARS = 100
LIST_ITEMS = 5
NESTED_LIST_ITEMS = 3
# What an answer's length is estimated from: a number's characters, and the whitespace a server's grammar allows
# around each separator (llama.cpp's: a space, or up to two line breaks and 20 spaces or tabs), in tokens.
NUMBER_CHARS = 24
SEPARATOR_TOKENS = 3
# The most tokens a JSON answer may take, however loose its schema.
ANSWER_TOKENS_CEILING = 8192
YES, NO = "yes", "no"


def bounded_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a JSON schema in which every string has a `maxLength` and every list a `maxItems` (their own when
    tighter), and every object with properties allows no others."""
    bounded = copy.deepcopy(schema)
    _bound(bounded, nested=False)
    return bounded


def _bound(node: Any, *, nested: bool) -> None:
    if isinstance(node, list):
        for item in node:
            _bound(item, nested=nested)
        return
    if not isinstance(node, dict):
        return
    types = node.get("type")
    types = types if isinstance(types, list) else [types]
    if "string" in types and "enum" not in node and "const" not in node:
        node["maxLength"] = min(node.get("maxLength", STRING_CHARS), STRING_CHARS)
    if "array" in types:
        node["maxItems"] = min(node.get("maxItems", LIST_ITEMS), NESTED_LIST_ITEMS if nested else LIST_ITEMS)
    if "object" in types and "properties" in node:
        node["additionalProperties"] = False
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions"):
            for child in value.values():
                _bound(child, nested=nested or key != "properties")
        elif key in ("items", "prefixItems"):
            _bound(value, nested=True)
        elif key in ("anyOf", "oneOf", "allOf"):
            _bound(value, nested=nested)


def answer_tokens(schema: dict[str, Any]) -> int:
    """The most tokens an answer that fits a bounded schema can take, counting a token per character (plus the
    whitespace allowed around separators), at most ANSWER_TOKENS_CEILING: an answer is cut only where the schema
    does not bound it, or where a runaway in a script whose characters take several tokens each (Chinese) fills
    its strings."""
    return min(_longest(schema, schema.get("$defs", {})), ANSWER_TOKENS_CEILING)


def _longest(node: Any, definitions: dict[str, Any]) -> int:
    """The longest JSON text (in characters, separators counted as SEPARATOR_TOKENS) that fits `node`."""
    if not isinstance(node, dict):
        return NUMBER_CHARS
    if "$ref" in node:
        return _longest(definitions.get(node["$ref"].rsplit("/", 1)[-1], {}), definitions)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max(_longest(option, definitions) for option in node[key])
    if "enum" in node or "const" in node:
        return max(len(json.dumps(value)) for value in node.get("enum", [node.get("const")]))
    types = node.get("type")
    types = types if isinstance(types, list) else [types]
    if "object" in types:
        fields = node.get("properties", {})
        return SEPARATOR_TOKENS + sum(len(name) + 2 + 2 * SEPARATOR_TOKENS + _longest(f, definitions) for name, f in fields.items())
    if "array" in types:
        return SEPARATOR_TOKENS + node.get("maxItems", LIST_ITEMS) * (SEPARATOR_TOKENS + _longest(node.get("items", {}), definitions))
    if "string" in types:
        return node.get("maxLength", STRING_CHARS) + 2
    return NUMBER_CHARS


@dataclass(frozen=True)
class CallOption:
    """One value of a tool's choice argument as a model that answers in JSON is asked about it: the value, what it
    is for, and user messages that call for it."""

    value: str
    description: str
    examples: tuple[str, ...] = ()


class OptionsTool(dict):
    """An OpenAI tool whose one argument is a choice among `options`: sent as it is to a model that calls tools,
    and asked of a model that answers in JSON as one "yes"/"no" field per option, with the options' examples."""

    def __init__(self, tool: dict[str, Any], argument: str, options: Sequence[CallOption]) -> None:
        super().__init__(tool)
        self.argument = argument
        self.options = tuple(options)


@dataclass(frozen=True)
class Tool:
    """An offered tool as the OpenAI API describes it (its name, description and arguments' JSON schema), and the
    choice it offers when it is an `OptionsTool`."""

    name: str
    description: str
    parameters: dict[str, Any]
    argument: str = ""
    options: tuple[CallOption, ...] = ()

    @classmethod
    def of(cls, tool: Any) -> "Tool":
        """The tool from anything `bind_tools` accepts."""
        function = convert_to_openai_tool(tool)["function"]
        parameters = function.get("parameters") or {"type": "object"}
        name, description = function["name"], function.get("description", "")
        if isinstance(tool, OptionsTool):
            return cls(name, description, parameters, tool.argument, tool.options)
        return cls(name, description, parameters)


@dataclass(frozen=True)
class Choice:
    """One field of a JSON answer about optional calls, and the call its value makes (None: no call)."""

    field: str
    schema: dict[str, Any]
    call: Callable[[Any], tuple[str, dict] | None]


def choices(tools: Sequence[Tool]) -> tuple[list[Choice], str]:
    """The fields of the answer about optional calls, and the request describing them to the model: for an
    `OptionsTool`, a "yes"/"no" field per option (its examples shown with their answers, and a message that
    brings no news); for any other tool, its arguments or null."""
    fields: list[Choice] = []
    lines: list[str] = []
    for tool in tools:
        for option in tool.options:
            fields.append(Choice(option.value, {"enum": [YES, NO]}, _option_call(tool.name, tool.argument, option.value)))
            lines.append(JSON_CALL_OPTION.format(field=json.dumps(option.value), description=option.description))
        if not tool.options:
            fields.append(Choice(tool.name, {"anyOf": [tool.parameters, {"type": "null"}]}, _args_call(tool.name)))
            lines.append(JSON_CALL_TOOL.format(field=json.dumps(tool.name), description=tool.description))
    shown = [(example, option.value) for tool in tools for option in tool.options for example in option.examples]
    examples = "\n".join(
        JSON_CALL_EXAMPLE.format(message=message, answer=json.dumps({field.field: _said(field, value) for field in fields}))
        for message, value in [*shown, (JSON_NO_NEWS_EXAMPLE, None)]
    )
    request = JSON_CALLS_REQUEST.format(choices="\n".join(lines), examples=JSON_CALL_EXAMPLES.format(examples=examples) if shown else "")
    return fields, request


def _said(field: Choice, value: str | None) -> str | None:
    """A field's value in an example answer: "yes" for the option the example is about, "no" or null otherwise."""
    if field.schema.get("enum") == [YES, NO]:
        return YES if field.field == value else NO
    return None


def _option_call(name: str, argument: str, value: str) -> Callable[[Any], tuple[str, dict] | None]:
    return lambda answer: (name, {argument: value}) if answer == YES else None


def _args_call(name: str) -> Callable[[Any], tuple[str, dict] | None]:
    return lambda answer: (name, answer) if isinstance(answer, dict) else None


def forced_tool(tools: Sequence[Tool], tool_choice: Any) -> Tool | None:
    """The tool `tool_choice` makes the model call: the one it names, or the only tool under "any"/"required"."""
    if isinstance(tool_choice, dict):
        tool_choice = (tool_choice.get("function") or {}).get("name")
    if tool_choice in ("any", "required") and len(tools) == 1:
        return tools[0]
    return next((tool for tool in tools if tool.name == tool_choice), None)


def latest_user_message(messages: Sequence[BaseMessage]) -> tuple[HumanMessage | None, bool]:
    """The latest user message, and whether an assistant message after it already made calls."""
    for position in range(len(messages) - 1, -1, -1):
        if isinstance(messages[position], HumanMessage):
            later = messages[position + 1 :]
            return messages[position], any(isinstance(m, AIMessage) and m.tool_calls for m in later)
    return None, False


def _call(name: str, args: dict) -> dict:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex}", "type": "tool_call"}


def _invalid_call(name: str, text: str, error: str) -> dict:
    return {"name": name, "args": text, "id": f"call_{uuid.uuid4().hex}", "error": error, "type": "invalid_tool_call"}


def read_answer(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """The JSON value of an answer and None, or None and why it is not JSON of `schema` (one short phrase)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None, "the answer is not JSON"
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        return None, f"the answer does not fit the schema ({error.message[:200]})"
    return value, None


class JsonCallModel(BaseChatModel):
    """The endpoint's chat model with tool calls asked for as schema-constrained JSON (see the module's docstring)."""

    inner: ChatOpenAI

    @property
    def _llm_type(self) -> str:
        return "json-calls"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"call_mode": "json", **self.inner._identifying_params}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable:
        """The model with `tools` offered (forced by `tool_choice`), answered by JSON requests (`parallel_tool_calls`,
        which means nothing without tools, is dropped)."""
        kwargs.pop("parallel_tool_calls", None)
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: Sequence[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        calls = self._calls(messages, tools, tool_choice)
        if calls is not None and calls.forced:
            return ChatResult(generations=[ChatGeneration(message=calls.message())])
        reply = self.inner._generate(messages, stop, None, **kwargs).generations[0]
        message = reply.message if calls is None else calls.beside(reply.message)
        return ChatResult(generations=[ChatGeneration(message=message, generation_info=reply.generation_info)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: Sequence[dict] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        calls = self._calls(messages, tools, tool_choice)
        if calls is not None and calls.forced:
            yield ChatGenerationChunk(message=calls.chunk())
            return
        yield from self.inner._stream(messages, stop, None, **kwargs)
        if calls is not None:
            yield ChatGenerationChunk(message=calls.chunk())

    def _calls(self, messages: list[BaseMessage], tools: Sequence[dict] | None, tool_choice: Any) -> "JsonCalls | None":
        """The calls the model makes when `tools` are offered (None when none are, or the user's latest message
        was already answered with calls): asked as JSON."""
        if not tools or tool_choice == "none":
            return None
        offered = [Tool.of(tool) for tool in tools]
        if (forced := forced_tool(offered, tool_choice)) is not None:
            schema = bounded_schema(forced.parameters)
            answer, usage = self._ask(messages, forced.name, schema)
            value, error = read_answer(answer, schema)
            call = _invalid_call(forced.name, answer, error) if error else _call(forced.name, value)
            return JsonCalls([call], usage, forced=True)
        latest, answered = latest_user_message(messages)
        if latest is None or answered:
            return None
        fields, instruction = choices(offered)
        schema = bounded_schema(
            {
                "type": "object",
                "properties": {choice.field: choice.schema for choice in fields},
                "required": [choice.field for choice in fields],
            }
        )
        prompt = [SystemMessage(instruction), HumanMessage(latest.text)]
        answer, usage = self._ask(prompt, "_".join(tool.name for tool in offered), schema)
        value, error = read_answer(answer, schema)
        if error:
            name = offered[0].name if len(offered) == 1 else ""
            return JsonCalls([_invalid_call(name, answer, error)], usage)
        made = [choice.call(value[choice.field]) for choice in fields]
        return JsonCalls([_call(*call) for call in made if call is not None], usage)

    def _ask(self, messages: Sequence[BaseMessage], name: str, schema: dict[str, Any]) -> tuple[str, dict | None]:
        """One request whose answer the schema constrains (`response_format` json_schema, sent as the request's
        own field so that the answer is read like any other completion): its text and token usage."""
        response_format = {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        result = self.inner._generate(
            list(messages), None, None, extra_body={"response_format": response_format}, max_tokens=answer_tokens(schema)
        )
        message = result.generations[0].message
        return message.text, getattr(message, "usage_metadata", None)


@dataclass
class JsonCalls:
    """The calls a JSON answer made (valid or invalid), the answer's token usage, and whether they were forced."""

    calls: list[dict]
    usage: dict | None
    forced: bool = False

    @property
    def _valid(self) -> list[dict]:
        return [call for call in self.calls if call["type"] == "tool_call"]

    @property
    def _invalid(self) -> list[dict]:
        return [call for call in self.calls if call["type"] == "invalid_tool_call"]

    def message(self) -> AIMessage:
        """An assistant message with the calls and no text."""
        return AIMessage(content="", tool_calls=self._valid, invalid_tool_calls=self._invalid, usage_metadata=self.usage)

    def beside(self, reply: BaseMessage) -> AIMessage:
        """The reply with the calls beside it, its token usage and the answer's added up."""
        usage = add_usage(getattr(reply, "usage_metadata", None), self.usage) if self.usage else reply.usage_metadata
        return AIMessage(
            content=reply.content,
            id=reply.id,
            response_metadata=reply.response_metadata,
            tool_calls=self._valid,
            invalid_tool_calls=self._invalid,
            usage_metadata=usage,
        )

    def chunk(self) -> AIMessageChunk:
        """The calls as the last chunk of a streamed reply (with the answer's token usage). A chunk's calls are
        read from their arguments' text, so an invalid call's answer is sent as a JSON string: read back, it is
        not an object, and the call stays invalid."""
        return AIMessageChunk(
            content="",
            tool_call_chunks=[
                {
                    "name": call["name"],
                    "args": json.dumps(call["args"]),
                    "id": call["id"],
                    "index": index,
                    "type": "tool_call_chunk",
                }
                for index, call in enumerate(self.calls)
            ],
            usage_metadata=self.usage,
        )

"""Size and shape limits on what a client may send the API server, whether auth is on or not.

One user's huge or deeply nested write must neither stall the server for everyone nor be stored and shipped
to other users' pages on every poll. `check_body` reads a request body as the server guard
(`graph.server.guard`) buffered it: JSON that is malformed, nests too deep, holds text that is not Unicode (a
lone surrogate such as `"\\ud800"`) or a number that is not finite (`NaN`, `1e999999`) is a `RequestRefused`
with status 400; anything over a limit one with status 413; each with a sentence saying which part and which
limit. The fields are checked by name in every *envelope* of a body: the body itself, each item of a batch, and
the `params` of a JSON-RPC call (Aegra's and langgraph-api's `/threads/{id}/commands`, A2A, MCP), so the same rules
cover the Agent Protocol's threads, runs, assistants and store routes on any server and every path a run's
input takes. A field without a limit of its own gets `MAX_FIELD_BYTES`, so that no field is unbounded; a run
input that names no user message is refused (400) rather than left to fail in the graph. A cron may fire at
most once an hour (`check_cron_schedule`): each firing is a model call on the operator's bill.
"""

import json
import math
from collections.abc import Iterator
from typing import Any

from graph.schedules import MIN_CRON_INTERVAL_SECONDS, shortest_interval

MAX_REQUEST_BYTES = 1024 * 1024
MAX_QUERY_BYTES = 8 * 1024
MAX_JSON_DEPTH = 64
MAX_STORE_VALUE_BYTES = 64 * 1024
MAX_RUN_INPUT_BYTES = 256 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_CONFIG_BYTES = 64 * 1024
MAX_TEXT_BYTES = 4 * 1024
MAX_FIELD_BYTES = 16 * 1024
MAX_NAME_CHARACTERS = 256
MAX_NAMESPACE_LABELS = 8
MAX_INDEX_FIELDS = 32
MAX_SEARCH_LIMIT = 100
# Envelope fields holding JSON documents, and how many bytes each may take.
DOCUMENT_LIMITS = {
    # Store values; the memory page sends the version it edited from as `base`.
    "value": MAX_STORE_VALUE_BYTES,
    "base": MAX_STORE_VALUE_BYTES,
    # What a run starts from or resumes with: runs and crons, commands' `run.start` / `input.respond`,
    # A2A's `message/send`, MCP's `tools/call`, state updates and a thread's supersteps.
    "input": MAX_RUN_INPUT_BYTES,
    "arguments": MAX_RUN_INPUT_BYTES,
    "message": MAX_RUN_INPUT_BYTES,
    "command": MAX_RUN_INPUT_BYTES,
    "resume": MAX_RUN_INPUT_BYTES,
    "response": MAX_RUN_INPUT_BYTES,
    "responses": MAX_RUN_INPUT_BYTES,
    "update": MAX_RUN_INPUT_BYTES,
    "values": MAX_RUN_INPUT_BYTES,
    "supersteps": MAX_RUN_INPUT_BYTES,
    "metadata": MAX_METADATA_BYTES,
    "filter": MAX_METADATA_BYTES,
    "config": MAX_CONFIG_BYTES,
    "context": MAX_CONFIG_BYTES,
    "configuration": MAX_CONFIG_BYTES,
    "description": MAX_TEXT_BYTES,
    "query": MAX_TEXT_BYTES,
    "checkpoint": MAX_TEXT_BYTES,
}
# Envelope fields naming one thing, at most `MAX_NAME_CHARACTERS` long, and what they name.
NAME_FIELDS = {
    "key": "The store key",
    "name": "The name",
    "graph_id": "The graph id",
    "assistant_id": "The assistant id",
    "thread_id": "The thread id",
    "checkpoint_id": "The checkpoint id",
    "checkpoint_ns": "The checkpoint namespace",
    "as_node": "The node name",
}
NAMESPACE_FIELDS = ("namespace", "namespace_prefix", "namespace_suffix", "prefix", "suffix")
# Fields whose value is the graph's input: it must carry a user message.
RUN_INPUT_FIELDS = ("input", "arguments")
USER_MESSAGE_TYPES = ("human", "user")


class RequestRefused(ValueError):
    """A request the server must not act on: an HTTP status and one sentence for the client."""

    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence


def json_size(value: Any) -> int:
    """How many bytes `value` takes as JSON (UTF-8): what the size limits count."""
    return len(json.dumps(value, ensure_ascii=False, default=str).encode(errors="surrogatepass"))


def too_large(what: str, size: int, limit: int) -> RequestRefused:
    """The 413 for `what`, which takes `size` bytes against a limit of `limit`."""
    return RequestRefused(413, f"{what} is {size:,} bytes; the limit is {limit:,} bytes.")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise RequestRefused(400, f"The request body holds the number {text[:40]}, which is not finite.")
    return number


def _no_constant(name: str) -> None:
    raise RequestRefused(400, f"The request body holds {name}, which is not a JSON number.")


def parse_json(body: bytes) -> Any:
    """The JSON document in `body`; 400 with a sentence when it is not UTF-8 JSON of finite numbers and Unicode
    text, or nests too deep."""
    try:
        document = json.loads(body, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise RequestRefused(400, f"The request body nests deeper than {MAX_JSON_DEPTH} levels.") from None
    except RequestRefused:
        raise
    except (UnicodeDecodeError, ValueError) as error:
        raise RequestRefused(400, f"The request body is not valid JSON ({error}).") from None
    if _depth(document) > MAX_JSON_DEPTH:
        raise RequestRefused(400, f"The request body nests deeper than {MAX_JSON_DEPTH} levels.")
    try:
        json.dumps(document, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise RequestRefused(
            400, "The request body holds a lone surrogate escape (such as \\ud800), which is not Unicode text."
        ) from None
    return document


def _depth(document: Any) -> int:
    """How deeply `document` nests (a scalar is 0), without recursion."""
    deepest, pending = 0, [(document, 0)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _check_name(what: str, name: Any) -> None:
    length = len(name) if isinstance(name, str) else json_size(name)
    if length > MAX_NAME_CHARACTERS:
        raise RequestRefused(413, f"{what} is {length:,} characters; the limit is {MAX_NAME_CHARACTERS}.")


def envelopes(document: Any) -> Iterator[dict[str, Any]]:
    """The objects of a request body whose fields the limits name: the body, each item of a batch, and the
    `params` of every JSON-RPC call among them."""
    for item in document if isinstance(document, list) else [document]:
        while isinstance(item, dict):
            yield item
            item = item["params"] if _is_call(item) else None


def _is_call(item: dict[str, Any]) -> bool:
    return isinstance(item.get("method"), str) and isinstance(item.get("params"), dict)


def _check_list(field: str, labels: Any, most: int, what: str) -> None:
    if isinstance(labels, list):
        if len(labels) > most:
            raise RequestRefused(413, f"The {field} has {len(labels)} {what}s; the limit is {most}.")
        for label in labels:
            _check_name(f"A {what} of the {field}", label)
    elif labels is not None:
        _check_name(f"The {field}", labels)


def _check_fields(fields: dict[str, Any]) -> None:
    """Bound every field of one envelope (see the module docstring)."""
    for field, value in fields.items():
        if value is None or (field == "params" and _is_call(fields)):
            continue
        if field in DOCUMENT_LIMITS:
            limit = DOCUMENT_LIMITS[field]
        elif field in NAME_FIELDS:
            _check_name(NAME_FIELDS[field], value)
            continue
        elif field in NAMESPACE_FIELDS:
            _check_list(field, value, MAX_NAMESPACE_LABELS, "label")
            continue
        elif field == "index":
            _check_list(field, value, MAX_INDEX_FIELDS, "index field")
            continue
        else:
            limit = MAX_FIELD_BYTES
        if (size := json_size(value)) > limit:
            raise too_large(f"The request's {field!r}", size, limit)
    for field in RUN_INPUT_FIELDS:
        check_run_input(field, fields.get(field))
    if isinstance(fields.get("message"), dict) and isinstance(fields["message"].get("parts"), list):
        check_run_input("A2A message", a2a_run_input(fields["message"]))


def check_run_input(field: str, run_input: Any) -> None:
    """Refuse a run input object that holds no user message in `messages` (the graph starts from the latest)."""
    if not isinstance(run_input, dict):
        return
    messages = run_input.get("messages")
    messages = messages if isinstance(messages, list) else [] if messages is None else [messages]
    if not any(_is_user_message(message) for message in messages):
        raise RequestRefused(
            400, f"The run's {field} holds no user message; send {{\"messages\": [{{\"role\": \"user\", \"content\": ...}}]}}."
        )


def a2a_run_input(message: dict[str, Any]) -> dict[str, Any]:
    """The run input langgraph-api builds from an A2A message: its text and file parts as one message (a user
    message when the A2A role is `user`), then every data part's object merged over it."""
    parts = [part for part in message["parts"] if isinstance(part, dict)]
    role = "user" if message.get("role") == "user" else "assistant"
    run_input: dict[str, Any] = {"messages": [{"role": role}]} if any("text" in p or "file" in p for p in parts) else {}
    for part in parts:
        if isinstance(part.get("data"), dict):
            run_input.update(part["data"])
    return run_input


def _is_user_message(message: Any) -> bool:
    """Whether one entry of `messages` is a user message in any form LangChain reads (a dict, a pair, a string)."""
    if isinstance(message, str):
        return True
    if isinstance(message, list | tuple) and len(message) == 2:
        return str(message[0]).lower() in USER_MESSAGE_TYPES
    if isinstance(message, dict):
        return str(message.get("role") or message.get("type") or "").lower() in USER_MESSAGE_TYPES
    return False


def check_body(body: bytes) -> None:
    """Refuse a request body that is not JSON, nests too deep, carries an oversized field or a run without a
    user message."""
    for fields in envelopes(parse_json(body)):
        _check_fields(fields)


def check_query(query_string: bytes) -> None:
    """Refuse an oversized query string (store keys and namespaces travel there on GET)."""
    if len(query_string) > MAX_QUERY_BYTES:
        raise RequestRefused(414, f"The query string is {len(query_string):,} bytes; the limit is {MAX_QUERY_BYTES:,}.")


def check_cron_schedule(schedule: Any) -> None:
    """Refuse (403) a cron schedule that fires more often than once every `MIN_CRON_INTERVAL_SECONDS`, and (422) one
    for a date that never comes (February 31), on which the server's scheduler would fail; a schedule that is not a
    cron line is left to the server, which refuses it with its own sentence."""
    from croniter import CroniterBadDateError, croniter

    if not isinstance(schedule, str) or not croniter.is_valid(schedule):
        return
    try:
        shortest = shortest_interval(schedule)
    except CroniterBadDateError:
        raise RequestRefused(422, f"The schedule {schedule!r} names a date that never comes.") from None
    if shortest < MIN_CRON_INTERVAL_SECONDS:
        minutes = round(shortest / 60)
        raise RequestRefused(
            403, f"The schedule {schedule!r} fires every {minutes} minute{'s' * (minutes != 1)}; a cron may fire at most once an hour."
        )

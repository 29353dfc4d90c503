"""Local OpenAI-compatible Chat Completions stub server for end-to-end tests.

The stub lets tests drive the real ``langchain_openai.ChatOpenAI`` client (and
anything built on it) without network access.  It listens on ``127.0.0.1`` on a
free port, answers ``POST /v1/chat/completions`` from a test-supplied
*responder* callable, and validates the conversation the way the real API does
(unanswered tool calls and orphan tool messages are rejected with HTTP 400
before the responder is consulted).

Typical use::

    def responder(request: dict) -> dict | StubError:
        if "save_memory" in tool_names(request):
            return tool_calls_reply(("save_memory", {"text": "likes tea"}))
        return text_reply("Noted!")

    with OpenAIStub(responder) as stub:
        llm = ChatOpenAI(base_url=stub.base_url, api_key="test", model="gpt-test")
        ...
        assert stub.requests[0]["model"] == "gpt-test"

A request with ``response_format: {"type": "json_schema", ...}`` is answered like a
server that constrains the answer to the schema: a :func:`json_reply` is checked
against the request's schema (a value that does not fit is the script's mistake,
answered HTTP 500). ``OpenAIStub(responder, tool_calling=False)`` plays a model
whose chat template has no tool syntax, as llama.cpp serves it: the tools of a
request are ignored (the responder sees the request without them) and the answer
is text.

``OpenAIStub(responder, n_ctx=N)`` plays llama.cpp's ``llama-server`` with a context window of ``N`` tokens
(counted as ``chars_per_token`` characters a token, plus four a message): ``GET /props`` reports it (unless
``props=False``), a prompt of ``N`` tokens or more is refused with HTTP 400 ``exceed_context_size_error`` carrying
``n_prompt_tokens`` and ``n_ctx``, and a text reply longer than the request's ``max_tokens`` is cut there with
``finish_reason: "length"``. :func:`cut_reply` is a reply cut at the limit on any stub.

The server uses the standard library, and ``jsonschema`` to check JSON answers.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jsonschema

__all__ = [
    "CutStream",
    "Delayed",
    "OpenAIStub",
    "RawBody",
    "StubError",
    "calls_reply",
    "cut_reply",
    "json_reply",
    "json_schema",
    "raw_call",
    "system_text",
    "text_reply",
    "tool_calls_reply",
    "tool_names",
]

_CHAT_PATH = "/v1/chat/completions"
_MODELS_PATH = "/v1/models"
_PROPS_PATH = "/props"
_TOKENS_PER_MESSAGE = 4
_ARGUMENT_PIECE_CHARS = 8
# How often serve_forever checks for shutdown; keeps stop() fast.
_SHUTDOWN_POLL_SECONDS = 0.02
_MISSING_TOOL_RESPONSES = (
    "An assistant message with 'tool_calls' must be followed by tool messages "
    "responding to each 'tool_call_id'. The following tool_call_ids did not "
    "have response messages: {ids}"
)
# "preceeding" is spelled exactly as in the real OpenAI error message.
_ORPHAN_TOOL_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a "
    "preceeding message with 'tool_calls'."
)


@dataclass
class StubError:
    """An HTTP error the responder wants the stub to answer with.

    ``status`` is the HTTP status code (e.g. 429, 500) and ``message`` the text
    placed in the OpenAI-style ``{"error": {"message": ...}}`` body.
    """

    status: int
    message: str


@dataclass
class RawBody:
    """A response body the responder wants sent verbatim, e.g. an HTML error page where JSON belongs.

    A non-streamed request gets ``text`` as its body (with ``status``); a
    streamed one gets it as the data of its one server-sent event.
    """

    text: str
    status: int = 200


@dataclass
class CutStream:
    """A reply whose connection is closed part-way: after ``after`` events of a stream, or half-way through
    the body of a non-streamed answer (which announced its full length)."""

    reply: dict
    after: int = 3


@dataclass
class Delayed:
    """A reply (or error) sent ``seconds`` late: a slow model, or one slower than the client's timeout."""

    reply: "dict | StubError | RawBody | CutStream"
    seconds: float


def text_reply(content: str) -> dict:
    """Build a reply in which the assistant answers with plain text."""
    return {"content": content, "tool_calls": []}


def cut_reply(content: str) -> dict:
    """A text reply the server stopped at its token limit (``finish_reason: "length"``)."""
    return {"content": content, "tool_calls": [], "finish_reason": "length"}


def tool_calls_reply(*calls: tuple[str, dict] | tuple[str, dict, str]) -> dict:
    """Build a reply in which the assistant calls one or more functions.

    Each call is ``(name, arguments)`` or ``(name, arguments, call_id)``; a
    missing id is generated as ``call_<uuid hex>``.  Arguments are serialized
    with ``json.dumps(ensure_ascii=False)``.
    """
    if not calls:
        raise ValueError("tool_calls_reply needs at least one call")
    tool_calls = []
    for call in calls:
        if len(call) == 2:
            name, arguments = call
            call_id = f"call_{uuid.uuid4().hex}"
        else:
            name, arguments, call_id = call
        tool_calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                },
            }
        )
    return {"content": None, "tool_calls": tool_calls}


def raw_call(name: str, arguments: str, call_id: str | None = "") -> dict:
    """One tool call as a server may send it: ``arguments`` verbatim (malformed JSON stays malformed), and
    ``call_id`` as given ("" is an empty id, None leaves the id out)."""
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def calls_reply(*calls: dict, content: str | None = None) -> dict:
    """A reply carrying the given raw calls (see :func:`raw_call`) beside ``content``."""
    return {"content": content, "tool_calls": list(calls)}


def json_reply(value: Any) -> dict:
    """A reply whose text is ``value`` as JSON: the answer to a request constrained by a json_schema
    ``response_format`` (the stub checks that it fits the request's schema)."""
    return {"content": json.dumps(value, ensure_ascii=False), "tool_calls": [], "json": value}


def json_schema(request: dict) -> dict | None:
    """The ``response_format`` json_schema of a request (``{"name", "schema", ...}``), or None."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return None
    return response_format.get("json_schema") or {}


def tool_names(request: dict) -> list[str]:
    """Return the names of the functions offered in ``request["tools"]``."""
    return [
        tool["function"]["name"]
        for tool in request.get("tools") or []
        if tool.get("type") == "function"
    ]


def system_text(request: dict) -> str:
    """Return the text of the system and developer messages, joined by a blank line ("" if none).

    Content given as a list of parts contributes the text of its text parts.
    """
    return "\n\n".join(
        _message_text(message)
        for message in request.get("messages") or []
        if message.get("role") in ("system", "developer")
    )


def _message_text(message: dict) -> str:
    """Return a message's content as text, joining text parts of a part list."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if part.get("type") == "text"
    )


def _error_body(message: str, error_type: str = "invalid_request_error") -> dict:
    """Build an OpenAI-style error response body."""
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _error_type_for(status: int) -> str:
    """Map an HTTP status to the ``error.type`` the real API uses for it."""
    if status == 401:
        return "invalid_authentication_error"
    if status == 429:
        return "rate_limit_exceeded"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _validate_request(body: Any) -> str | None:
    """Return an error message if ``body`` is not a valid chat request, else None."""
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not body.get("model"):
        return "You must provide a model parameter."
    messages = body.get("messages")
    if messages is None:
        return "Missing required parameter: 'messages'."
    if not isinstance(messages, list) or not messages:
        return (
            "Invalid 'messages': empty array. Expected an array with minimum "
            "length 1, but got an empty array instead."
        )
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message:
            return f"Missing required parameter: 'messages[{index}].role'."
        for position, call in enumerate(message.get("tool_calls") or []):
            if not isinstance(call, dict) or not call.get("id"):
                return f"Missing required parameter: 'messages[{index}].tool_calls[{position}].id'."
    return _validate_tool_pairing(messages)


def _validate_tool_pairing(messages: list[dict]) -> str | None:
    """Check that tool calls and tool messages pair up as the real API requires.

    Every assistant ``tool_calls`` entry must be answered by one of the ``tool``
    messages directly following it, and every ``tool`` message must answer a
    call of the assistant message that this run of tool messages follows.
    """
    open_ids: list[str] | None = None
    answered: set[str] = set()
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if open_ids is None or message.get("tool_call_id") not in open_ids:
                return _ORPHAN_TOOL_MESSAGE
            answered.add(message["tool_call_id"])
            continue
        if open_ids is not None:
            missing = [call_id for call_id in open_ids if call_id not in answered]
            if missing:
                return _MISSING_TOOL_RESPONSES.format(ids=", ".join(missing))
            open_ids = None
        if role == "assistant" and message.get("tool_calls"):
            open_ids = [call.get("id") for call in message["tool_calls"]]
            answered = set()
    if open_ids is not None:
        missing = [call_id for call_id in open_ids if call_id not in answered]
        if missing:
            return _MISSING_TOOL_RESPONSES.format(ids=", ".join(missing))
    return None


Outcome = dict | StubError | RawBody | CutStream | Delayed


def _check_reply(reply: Any) -> Outcome:
    """Return ``reply`` if it has the shape the reply helpers build (or is a fault), else raise."""
    if isinstance(reply, StubError | RawBody):
        return reply
    if isinstance(reply, CutStream | Delayed):
        _check_reply(reply.reply)
        return reply
    if (
        not isinstance(reply, dict)
        or not isinstance(reply.get("tool_calls"), list)
        or not (reply.get("content") is None or isinstance(reply.get("content"), str))
    ):
        raise TypeError(
            "responder must return text_reply(...), tool_calls_reply(...), calls_reply(...), "
            f"StubError, RawBody, CutStream or Delayed, got {reply!r}"
        )
    return reply


_TOOL_FIELDS = ("tools", "tool_choice", "parallel_tool_calls")


def _check_answer(request: dict, outcome: Outcome, *, tool_calling: bool) -> None:
    """Raise when a reply is one the stub's model could not give: calls from a model without tool syntax, or a
    JSON reply that does not fit the request's json_schema."""
    reply = outcome.reply if isinstance(outcome, CutStream | Delayed) else outcome
    if not isinstance(reply, dict):
        return
    if reply["tool_calls"] and not tool_calling:
        raise ValueError("this stub plays a model without tool calling; its replies cannot carry tool calls")
    schema = json_schema(request)
    if "json" in reply and schema is not None:
        jsonschema.validate(reply["json"], schema.get("schema") or {})


def _rough_tokens(text: str) -> int:
    """Estimate a token count (about four characters per token)."""
    return (len(text) + 3) // 4


def _usage(request: dict, reply: dict) -> dict:
    """Build a rough ``usage`` object for a request and its reply."""
    prompt = _rough_tokens(json.dumps(request.get("messages"), ensure_ascii=False))
    completion = _rough_tokens(
        (reply["content"] or "") + json.dumps(reply["tool_calls"], ensure_ascii=False)
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _finish_reason(reply: dict) -> str:
    """Return the finish reason matching a reply: its own (a cut reply's "length"), else by its calls."""
    return reply.get("finish_reason") or ("tool_calls" if reply["tool_calls"] else "stop")


def _completion(request: dict, reply: dict) -> dict:
    """Build a non-streamed ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply["content"],
        "refusal": None,
    }
    if reply["tool_calls"]:
        message["tool_calls"] = reply["tool_calls"]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(reply),
            }
        ],
        "usage": _usage(request, reply),
    }


def _chunks(request: dict, reply: dict) -> Iterator[dict]:
    """Yield the ``chat.completion.chunk`` objects of a streamed reply.

    Text is streamed one word (with its leading whitespace) per chunk; each
    tool call starts with a delta carrying index, id, type and name, followed
    by deltas with pieces of the arguments string.
    """
    include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "delta": delta,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
        }
        if include_usage:
            body["usage"] = None
        return body

    content = reply["content"]
    yield chunk({"role": "assistant", "content": "" if content is not None else None})
    for piece in re.findall(r"\s*\S+|\s+", content or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(reply["tool_calls"]):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.get("id"),
                        "type": "function",
                        "function": {"name": call["function"]["name"], "arguments": ""},
                    }
                ]
            }
        )
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), _ARGUMENT_PIECE_CHARS):
            piece = arguments[start : start + _ARGUMENT_PIECE_CHARS]
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = _usage(request, reply)
        yield usage_chunk


class OpenAIStub:
    """OpenAI-compatible /v1/chat/completions server on 127.0.0.1 with a free port, answering from a script.

    ``responder`` receives each valid request body (``model``, ``messages``,
    ``tools``, ``tool_choice``, ``stream``, ...) and returns a reply built with
    :func:`text_reply` / :func:`tool_calls_reply` / :func:`calls_reply`, a
    :class:`StubError`, or a transport fault: :class:`RawBody` (a body that is
    not a completion), :class:`CutStream` (the connection closed part-way),
    :class:`Delayed` (a slow answer).  Calls of a reply may lack ids or carry
    malformed arguments (:func:`raw_call`): the stub sends what it is given,
    and only checks what clients send it.
    Responder calls are serialized by a lock, so a scripted responder need not
    be thread-safe.  If the responder raises or returns anything else, the
    stub answers HTTP 500 with the problem in the error message.

    :attr:`requests` holds every request body that parsed as a JSON object;
    :attr:`rejections` holds ``(body, error message)`` for every parsed request
    answered HTTP 400 for breaking the API's rules (e.g. an unanswered tool
    call) or, playing llama.cpp, for a prompt too long for its context window.
    """

    def __init__(
        self,
        responder: Callable[[dict], Outcome],
        latency: float = 0.0,
        *,
        tool_calling: bool = True,
        n_ctx: int | None = None,
        props: bool = True,
        chars_per_token: float = 4.0,
    ):
        """Create a stopped stub that will answer with ``responder``, each answer ``latency`` seconds late
        (a model's time to answer; requests wait concurrently, the responder still answers one at a time);
        without ``tool_calling``, a model whose chat template has no tool syntax; with ``n_ctx``, llama.cpp's
        server with that context window (reported at ``/props`` when ``props``; see the module's docstring)."""
        self.responder = responder
        self.latency = latency
        self.tool_calling = tool_calling
        self.n_ctx = n_ctx
        self.props = props
        self.chars_per_token = chars_per_token
        self.requests: list[dict] = []
        self.rejections: list[tuple[Any, str]] = []
        self._lock = threading.Lock()
        self._arrival = threading.Condition(self._lock)
        self._responder_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("OpenAIStub is not running; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIStub:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            raise RuntimeError("OpenAIStub is already running")
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _SHUTDOWN_POLL_SECONDS},
            name="openai-stub",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down, close its socket and join the serving thread."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> OpenAIStub:
        """Start the stub for the duration of a ``with`` block."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop the stub when the ``with`` block ends."""
        self.stop()

    def _record(self, body: dict) -> None:
        """Append a received request body to :attr:`requests` (before the responder answers it)."""
        with self._arrival:
            self.requests.append(body)
            self._arrival.notify_all()

    def wait_for_request(self, matches: Callable[[dict], bool], timeout: float) -> bool:
        """Wait until a received request `matches` (at most `timeout` seconds); whether one did.

        A responder may call it: requests are recorded as they arrive, before their answer, so a responder
        that waits here for another request tells whether the two were in flight at the same time.
        """
        with self._arrival:
            return self._arrival.wait_for(lambda: any(matches(body) for body in self.requests), timeout)

    def _reject(self, body: Any, problem: str) -> None:
        """Append a request answered HTTP 400, with the reason, to :attr:`rejections`."""
        with self._lock:
            self.rejections.append((body, problem))

    def prompt_tokens(self, body: dict) -> int:
        """The prompt's tokens as this stub's llama.cpp counts them: its messages' text (and calls' arguments) at
        ``chars_per_token`` characters a token, plus four a message."""
        messages = body.get("messages") or []
        chars = sum(
            len(_message_text(message)) + len(json.dumps(message.get("tool_calls") or "", ensure_ascii=False))
            for message in messages
        )
        return round(chars / self.chars_per_token) + _TOKENS_PER_MESSAGE * len(messages)

    def exceeded(self, body: dict) -> dict | None:
        """llama.cpp's refusal of a prompt as long as its context window or longer, or None (or not playing it)."""
        if self.n_ctx is None or (tokens := self.prompt_tokens(body)) < self.n_ctx:
            return None
        message = f"request ({tokens} tokens) exceeds the available context size ({self.n_ctx} tokens), try increasing it"
        return {"code": 400, "message": message, "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens, "n_ctx": self.n_ctx}

    def within_max_tokens(self, body: dict, reply: Outcome) -> Outcome:
        """A text reply cut at the request's ``max_tokens`` (``finish_reason: "length"``) when playing llama.cpp."""
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if self.n_ctx is None or not limit or not isinstance(reply, dict) or reply["tool_calls"]:
            return reply
        content = reply["content"] or ""
        kept = int(limit * self.chars_per_token)
        if len(content) <= kept:
            return reply
        return {**reply, "content": content[:kept], "finish_reason": "length"}

    def _respond(self, body: dict) -> Outcome:
        """Ask the responder for a reply, turning failures into a 500 StubError.

        Without tool calling the responder sees the request without its tools, and may not answer with calls;
        a JSON reply must fit the request's json_schema.
        """
        seen = body if self.tool_calling else {k: v for k, v in body.items() if k not in _TOOL_FIELDS}
        with self._responder_lock:
            try:
                outcome = self.responder(seen)
                if isinstance(outcome, StubError):
                    return outcome
                reply = _check_reply(outcome)
                _check_answer(seen, reply, tool_calling=self.tool_calling)
                return self.within_max_tokens(body, reply)
            except Exception as exc:  # reported to the client, not swallowed
                return StubError(500, f"stub responder failed: {exc!r}")


def _make_handler(stub: OpenAIStub) -> type[BaseHTTPRequestHandler]:
    """Create the request handler class serving ``stub``."""

    class Handler(BaseHTTPRequestHandler):
        """Serves the OpenAI endpoints of one stub; one connection per request."""

        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Keep the test output quiet: do not log requests."""

        def do_GET(self) -> None:
            """Answer ``GET /v1/models`` (and ``GET /props`` when playing llama.cpp); anything else is 404."""
            if self.path.rstrip("/") == _PROPS_PATH and stub.n_ctx is not None and stub.props:
                self._send_json(200, {"default_generation_settings": {"n_ctx": stub.n_ctx}, "total_slots": 1})
            elif self.path.rstrip("/") == _MODELS_PATH:
                model = {
                    "id": "gpt-test",
                    "object": "model",
                    "created": 0,
                    "owned_by": "openai-stub",
                }
                self._send_json(200, {"object": "list", "data": [model]})
            else:
                self._send_not_found()

        def do_POST(self) -> None:
            """Answer ``POST /v1/chat/completions``; anything else is 404."""
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != _CHAT_PATH:
                self._send_not_found()
                return
            try:
                body = json.loads(raw)
            except ValueError:
                problem = "We could not parse the JSON body of your request."
                self._send_json(400, _error_body(problem))
                return
            if isinstance(body, dict):
                stub._record(body)
            problem = _validate_request(body)
            if problem is not None:
                stub._reject(body, problem)
                self._send_json(400, _error_body(problem))
                return
            if (refusal := stub.exceeded(body)) is not None:
                stub._reject(body, refusal["message"])
                self._send_json(400, {"error": refusal})
                return
            outcome = stub._respond(body)
            time.sleep(stub.latency)
            if isinstance(outcome, Delayed):
                time.sleep(outcome.seconds)
                outcome = outcome.reply
            if isinstance(outcome, RawBody):
                self._send_raw(outcome, streamed=bool(body.get("stream")))
            elif isinstance(outcome, CutStream):
                self._send_cut(body, outcome)
            elif isinstance(outcome, StubError):
                error = _error_body(outcome.message, _error_type_for(outcome.status))
                self._send_json(outcome.status, error)
            elif body.get("stream"):
                self._send_stream(body, outcome)
            else:
                self._send_json(200, _completion(body, outcome))

        def _send_not_found(self) -> None:
            """Answer 404 the way the real API does for unknown URLs."""
            self._send_json(404, _error_body(f"Invalid URL ({self.command} {self.path})"))

        def _send_json(self, status: int, payload: dict) -> None:
            """Send a complete JSON response and close the connection."""
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.close_connection = True
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (its timeout); nothing left to do

        def _start_stream(self, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _send_events(self, events: list[str], *, finish: bool = True) -> None:
            """Send server-sent events as chunks; with ``finish``, the end of the chunked body."""
            try:
                for event in events:
                    data = f"data: {event}\n\n".encode("utf-8")
                    self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if finish:
                    self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading early; nothing left to do

        def _send_stream(self, request: dict, reply: dict) -> None:
            """Send a reply as Server-Sent Events using chunked transfer encoding."""
            self._start_stream()
            events = [json.dumps(chunk, ensure_ascii=False) for chunk in _chunks(request, reply)]
            self._send_events([*events, "[DONE]"])

        def _send_raw(self, raw: RawBody, *, streamed: bool) -> None:
            """Send a body that is not what the client asked for: verbatim, or as a stream's one event."""
            if streamed:
                self._start_stream(raw.status)
                self._send_events([raw.text, "[DONE]"])
                return
            data = raw.text.encode("utf-8")
            self.send_response(raw.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def _send_cut(self, request: dict, cut: CutStream) -> None:
            """Send the start of a reply and close the connection: the stream's first events, or half the body."""
            if request.get("stream"):
                self._start_stream()
                events = [json.dumps(chunk, ensure_ascii=False) for chunk in _chunks(request, cut.reply)]
                self._send_events(events[: cut.after], finish=False)
            else:
                data = json.dumps(_completion(request, cut.reply), ensure_ascii=False).encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    return Handler

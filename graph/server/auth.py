"""Auth for the LangGraph API server (`langgraph.json` → `auth`): bearer tokens stand for users.

Tokens come from `MAISTRO_AUTH_TOKENS` (`"tokA:alice,tokB:bob"`) and/or `MAISTRO_AUTH_TOKENS_FILE` (a JSON
object `{token: user_id}`), read once when the server starts; a variable that is set but empty, a token
given twice, or a misspelt MAISTRO_AUTH* variable stops the server. With neither set, auth is off: every
request is allowed, as on an open dev server, and runs act for the `user_id` the client sends. The server
logs one line at startup saying which.

With tokens, a request without a valid `Authorization: Bearer <token>` (or `X-Api-Key: <token>`, which
Agent Chat UI and the SDKs' `api_key=` send) gets 401, and every resource is
owned: threads (and the runs on them) and assistants carry their owner in their metadata and are filtered
by it; crons run on one of the caller's own threads, carry their owner in their metadata and are filtered by
it (`own_crons`); store namespaces must have the caller's `user_label` as their second label (`("todo", label)`);
anything else is refused. Whether auth is on or not, no store request may name a namespace the agent
keeps its own bookkeeping in (`graph.memory.store.INTERNAL_NAMESPACES`): 403. The server hands the caller to the
graph as `config["configurable"]["langgraph_auth_user"]`, whose identity `RunContext` prefers to any client
`user_id`.
Where langgraph-api and Aegra call these rules differently, `graph.server.platform` says how.
Whether auth is on or not, store values, run inputs and store search limits are bounded (HTTP 413, clamps).

To use an identity provider, make `identify` verify its tokens (a JWT, say) and `auth_enabled` return True.

The rules are plain functions; `auth`, the `langgraph_sdk.Auth` object that registers them, is built when the
server first asks for it. The server has the SDK loaded already, and importing this module stays cheap.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graph.memory.store import INTERNAL_NAMESPACES, InvalidUserIdError, check_user_id, user_label
from graph.server.limits import (
    MAX_RUN_INPUT_BYTES,
    MAX_SEARCH_LIMIT,
    MAX_STORE_VALUE_BYTES,
    RequestRefused,
    check_cron_schedule,
    json_size,
)
from graph.server.platform import (
    header_values,
    run_input,
    server_store,
    store_request_namespace,
    store_rule_result,
)
from graph.server.startup import checked_at_start
from graph.settings import Settings, current_settings

if TYPE_CHECKING:
    from langgraph_sdk import Auth

TOKENS_VARIABLE = "MAISTRO_AUTH_TOKENS"
TOKENS_FILE_VARIABLE = "MAISTRO_AUTH_TOKENS_FILE"
OWNER = "owner"
SYSTEM_ASSISTANT = {"created_by": "system"}
ANONYMOUS = ""
API_KEY_HEADER = "x-api-key"
# The headers a token may come in; a request may send each at most once.
CREDENTIAL_HEADERS = ("authorization", API_KEY_HEADER)
# A token is a password for a whole user: long enough that guessing one is hopeless behind the 429s.
MIN_TOKEN_CHARACTERS = 16
logger = logging.getLogger(__name__)


def _token_table(pairs: list[tuple[str, object]], source: str) -> dict[str, str]:
    """Token → user id from (token, user id) pairs, trimmed; blank entries and repeated tokens are errors."""
    table: dict[str, str] = {}
    for token, user_id in pairs:
        if not token.strip() or not isinstance(user_id, str) or not user_id.strip():
            raise ValueError(f"{source}: every entry needs a non-empty token and a non-empty user id")
        if token.strip() in table:
            raise ValueError(f"{source}: a token is listed more than once; give each token to one user")
        if len(token.strip()) < MIN_TOKEN_CHARACTERS:
            raise ValueError(
                f"{source}: a {len(token.strip())}-character token is too easy to guess; use at least "
                f"{MIN_TOKEN_CHARACTERS} (python -c 'import secrets; print(secrets.token_urlsafe(24))' makes one)"
            )
        try:
            table[token.strip()] = check_user_id(user_id.strip())
        except InvalidUserIdError as error:
            raise ValueError(f"{source}: {error}") from None
    return table


def parse_token_list(text: str) -> dict[str, str]:
    """Parse `"token:user,token:user"`; the user id is everything after the first ':'."""
    entries = [entry for entry in text.split(",") if entry.strip()]
    if any(":" not in entry for entry in entries):
        raise ValueError(f"{TOKENS_VARIABLE}: write each entry as token:user_id, separated by commas")
    return _token_table([tuple(entry.split(":", 1)) for entry in entries], TOKENS_VARIABLE)


class _JsonObject(list):
    """A JSON object read as its (key, value) pairs, so that a repeated key is seen."""


def parse_token_file(path: Path) -> dict[str, str]:
    """Read a JSON object `{token: user_id}` (a token given twice is an error, not "the last one wins")."""
    pairs = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_JsonObject)
    if not isinstance(pairs, _JsonObject):
        raise ValueError(f"{TOKENS_FILE_VARIABLE}: {path} must hold a JSON object {{token: user_id}}")
    return _token_table(pairs, str(path))


def load_tokens(settings: Settings) -> dict[str, str]:
    """The token → user id table from the settings' MAISTRO_AUTH_TOKENS(_FILE); {} when neither is set.

    A variable that is set but yields no token, a missing file, or one token given to two users is an error,
    so that a typo never leaves the server open.
    """
    listed = parse_token_list(settings.auth_tokens) if settings.auth_tokens else {}
    filed = parse_token_file(Path(settings.auth_tokens_file)) if settings.auth_tokens_file else {}
    if (settings.auth_tokens or settings.auth_tokens_file) and not (listed or filed):
        raise ValueError(f"{TOKENS_VARIABLE} / {TOKENS_FILE_VARIABLE} are set but name no token")
    if any(listed[token] != filed[token] for token in listed.keys() & filed.keys()):
        raise ValueError(f"{TOKENS_VARIABLE} and {TOKENS_FILE_VARIABLE} give one token to two users")
    return listed | filed


TOKENS = checked_at_start(lambda: load_tokens(current_settings()))


def auth_enabled() -> bool:
    """Whether requests must authenticate and resources are owned (tokens are configured)."""
    return bool(TOKENS)


def identify(token: str) -> str | None:
    """The user id a bearer token stands for, or None. Replace this to plug in an identity provider."""
    found = None
    for known, user_id in TOKENS.items():
        if hmac.compare_digest(known.encode(), token.encode()):
            found = user_id
    return found


def _unauthorized(detail: str) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=401, detail=detail, headers={"WWW-Authenticate": "Bearer"})


def _bad_request(detail: str) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=400, detail=detail)


def _forbidden(detail: str) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=403, detail=detail)


def _refusal(refused: RequestRefused) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=refused.status, detail=refused.sentence.rstrip("."))


def _too_large(what: str, size: int, limit: int) -> Exception:
    from langgraph_sdk.auth.exceptions import HTTPException

    return HTTPException(status_code=413, detail=f"{what} is {size:,} bytes; the limit is {limit:,} bytes")


class RepeatedCredentialError(ValueError):
    """A request sent `Authorization` or `X-Api-Key` more than once: which one counts would depend on the reader."""


def presented_token(headers: Mapping | Iterable[tuple] | None) -> str:
    """The token a request presents: `Authorization: Bearer <token>`, else `X-Api-Key: <token>` ("" if none).

    Agent Chat UI and the SDKs' `api_key=` / LANGGRAPH_API_KEY send `X-Api-Key`. This is the one reader of
    credentials: the server guard (which counts wrong tokens), the auth handler and the memory page's API all
    call it, so that they check the same token. Raises `RepeatedCredentialError` when either header comes more
    than once (headers in any form `graph.server.platform.header_values` reads).
    """
    authorization, api_key = (header_values(headers, name) for name in CREDENTIAL_HEADERS)
    if len(authorization) > 1 or len(api_key) > 1:
        raise RepeatedCredentialError("Send one Authorization or X-Api-Key header, not several.")
    scheme, _, token = "".join(authorization).strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return "".join(api_key).strip()


async def authenticate(headers: Mapping | None) -> dict[str, str]:
    """The caller as `{"identity": user id, "user_label": store label}`, from their token (Bearer or X-Api-Key);
    401 without a valid one (when auth is on), 400 for a repeated credential header.

    One parameter named `headers`, and a dict back: langgraph-api passes the headers by that name, Aegra
    positionally, and Aegra takes only a dict. Aegra's `store.scopes` (aegra.json) read `user_label`.
    """
    if not auth_enabled():
        return {"identity": ANONYMOUS}
    try:
        token = presented_token(headers)
    except RepeatedCredentialError as error:
        raise _bad_request(str(error).rstrip(".")) from None
    if not token:
        raise _unauthorized("Send Authorization: Bearer <token> or X-Api-Key: <token>")
    user_id = identify(token)
    if not user_id or not user_id.strip():
        raise _unauthorized("Unknown or expired token")
    return {"identity": user_id, "user_label": user_label(user_id)}


def _stamp_owner(value: dict, owner: str) -> None:
    """Write the owner into the metadata a request carries, over any owner or `created_by` the client sent."""
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("created_by", None)
        metadata[OWNER] = owner


async def own_threads(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType | None:
    """Threads and the runs on them: new ones are stamped with their owner; every access is filtered by it."""
    if ctx.action == "create_run":
        size = json_size(run_input(value))
        if size > MAX_RUN_INPUT_BYTES:
            raise _too_large("The run's input", size, MAX_RUN_INPUT_BYTES)
    if not auth_enabled():
        return None
    if ctx.action in ("create", "create_run", "update"):
        _stamp_owner(value, ctx.user.identity)
    return {OWNER: ctx.user.identity}


# What a run learns its caller from: set by the server, never taken from a client's payload.
AUTH_KEYS = ("langgraph_auth_user", "langgraph_auth_user_id", "langgraph_auth_permissions")


def _drop_auth_keys(payload: object) -> None:
    """Remove any caller a client wrote into a cron's run settings (`config.configurable`, `context`).

    langgraph-api's cron scheduler runs each firing as `config.configurable.langgraph_auth_user` when the stored
    payload names one, and as the cron's creator only otherwise. Its request validation drops these keys today;
    this rule keeps a forged caller out of the stored payload whatever a later server version lets through.
    """
    if not isinstance(payload, dict):
        return
    config = payload.get("config")
    for settings in (config.get("configurable") if isinstance(config, dict) else None, payload.get("context")):
        if isinstance(settings, dict):
            for key in AUTH_KEYS:
                settings.pop(key, None)


async def own_crons(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType | None:
    """Crons: each user makes them on their own threads only, and sees, changes and cancels only theirs.

    A schedule firing more than once an hour is refused whether auth is on or not (`check_cron_schedule`). With
    auth on, a cron without a thread (its runs would start threads no one reads) and a cron with a webhook (the
    server would call an address of the client's choosing on a schedule) are refused; the run settings lose any caller
    the client wrote into them, and the owner is stamped into the metadata. Whose thread it is the servers check
    themselves with the thread rules (langgraph-api) or the thread's owner (Aegra), as Aegra keeps each cron's
    owner itself.
    """
    if ctx.action in ("create", "update"):
        try:
            check_cron_schedule(value.get("schedule"))
        except RequestRefused as refused:
            raise _refusal(refused) from None
    if not auth_enabled():
        return None
    if ctx.action in ("create", "update"):
        if value.get("webhook") or (isinstance(value.get("payload"), dict) and value["payload"].get("webhook")):
            raise _forbidden("A cron may not call a webhook; its runs post into its thread")
        if ctx.action == "create" and not value.get("thread_id"):
            raise _forbidden("A cron must run on one of your threads: create it with crons.create_for_thread")
        _drop_auth_keys(value.get("payload"))
        _drop_auth_keys(value)
        _stamp_owner(value, ctx.user.identity)
    return {OWNER: ctx.user.identity}


async def own_assistants(ctx: Auth.types.AuthContext, value: dict) -> Auth.types.FilterType | None:
    """Assistants: each user sees the server's own assistants and theirs, and changes only theirs."""
    if not auth_enabled():
        return None
    if ctx.action in ("create", "update"):
        _stamp_owner(value, ctx.user.identity)
    if ctx.action in ("read", "search"):
        return {"$or": [{OWNER: ctx.user.identity}, SYSTEM_ASSISTANT]}
    return {OWNER: ctx.user.identity}


def scoped_namespace(action: str, namespace: tuple[str, ...] | None, label: str) -> tuple[str, ...]:
    """The namespace a store request may use: one whose second label is the caller's `label`.

    get/put/delete name a whole namespace. search and list_namespaces take a prefix: `("todo",)` becomes
    `("todo", label)`; list_namespaces without a prefix becomes `("*", label)`, every kind of the caller's
    (search does not expand wildcards, so it must name a kind).
    """
    namespace = tuple(namespace or ())
    if len(namespace) >= 2:
        if namespace[1] != label:
            raise _forbidden("That namespace belongs to another user")
        return namespace
    if action == "list_namespaces":
        return (namespace[0] if namespace else "*", label)
    if action == "search" and namespace:
        return (namespace[0], label)
    raise _forbidden("Name a namespace of your own: (kind, your user label)")


def refuse_internal_namespace(namespace: tuple[str, ...]) -> None:
    """403 for a store request whose namespace (or prefix) is one the agent keeps its own bookkeeping in: no request
    may read, write, search or list it, whoever sends it."""
    if namespace and namespace[0] in INTERNAL_NAMESPACES:
        raise _forbidden(f"The namespace {namespace[0]!r} holds the agent's own bookkeeping; no request may use it")


def bound_store_request(action: str, value: dict) -> None:
    """Refuse an oversized store value (HTTP 413) and clamp a search's limit and offset to sane ranges."""
    if action == "put" and value.get("value") is not None:
        size = json_size(value["value"])
        if size > MAX_STORE_VALUE_BYTES:
            raise _too_large("The store value", size, MAX_STORE_VALUE_BYTES)
    if action in ("search", "list_namespaces"):
        if "limit" in value:
            value["limit"] = min(max(_as_int(value["limit"], 10), 1), MAX_SEARCH_LIMIT)
        if "offset" in value:
            value["offset"] = max(_as_int(value["offset"], 0), 0)


def _as_int(value: Any, fallback: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return fallback


async def own_memories(ctx: Auth.types.AuthContext, value: dict) -> dict | None:
    """Store: sizes bounded; the agent's own bookkeeping refused; with auth on, only namespaces whose second label
    is the caller's `user_label` (prefixes are narrowed to them); memory writes checked and recorded
    (`graph.memory.api_writes`)."""
    from graph.memory.api_writes import check_api_write
    from graph.server.platform import served_kinds

    bound_store_request(ctx.action, value)
    namespace = store_request_namespace(ctx.action, value)
    refuse_internal_namespace(namespace)
    if auth_enabled():
        namespace = scoped_namespace(ctx.action, namespace, user_label(ctx.user.identity))
    elif not namespace:
        return None
    await check_api_write(ctx.action, value, namespace, server_store, served_kinds())
    return store_rule_result(ctx.action, value, namespace)


async def refuse_the_rest(ctx: Auth.types.AuthContext, value: dict) -> bool | None:
    """Anything without an owner rule above (a resource a later server version adds) is refused while auth is on."""
    return False if auth_enabled() else None


def create_auth() -> Auth:
    """The `Auth` object the server loads (`langgraph.json` → `auth.path`), with the rules above registered."""
    from langgraph_sdk import Auth

    if auth_enabled():
        logger.warning("task-maistro auth is on: %d token(s) for %d user(s)", len(TOKENS), len(set(TOKENS.values())))
    else:
        logger.warning("task-maistro auth is OFF: MAISTRO_AUTH_TOKENS(_FILE) unset, every request is allowed")
    registry = Auth()
    registry.authenticate(authenticate)
    registry.on.threads(own_threads)
    registry.on.assistants(own_assistants)
    registry.on.crons(own_crons)
    registry.on.store(own_memories)
    registry.on(refuse_the_rest)
    return registry


def __getattr__(name: str) -> Any:
    """Build `auth` on first access (the server's `getattr(module, "auth")`), and from then on let the reminders
    the agent makes in this server's runs use the server's own crons (`graph.server.platform.create_reminder`)."""
    if name != "auth":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from graph.nodes.remind import install_scheduler  # the agent's node and its model client: not at import time
    from graph.server.platform import create_reminder

    registry = globals()["auth"] = create_auth()
    install_scheduler(create_reminder)
    return registry

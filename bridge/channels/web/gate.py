"""Who is asking the web API, and what they asked: tokens, bodies, chat ids.

`WebGate` maps a bearer token to its tenant (compared in constant time with
every configured token): the web token belongs to the local tenant, a
tenant's `[tenants.X] web_token` to X. Every `/api/*` route reads the
tenant here and scopes everything it does to it. The channel's `Inbound`
carries identity `local` for the local tenant and `tenant:X` otherwise
(`bridge.core.tenants.web_token_rule` resolves it back). `body(...)` reads a
JSON object into a pydantic model (400 naming each wrong field and why, never
the value sent; 413 when too large);
`chat(...)` reads and checks the `chat` query parameter. `caller(...)` also
names the token by `token_key` (a short hash: event streams are counted and
ended per token, `bridge.channels.web.streams`). A tenant `barred` says no to
(one whose data `roost forget` is erasing) is refused like an unknown token.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from typing import TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.channels.web.input import BodyError, decode_json_object
from bridge.core.sessions import SessionKey

MAX_BODY = 1024 * 1024
CHAT_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
ROW_ID_MAX = 2**63 - 1  # a row id or sequence number in a body: what SQLite can hold
CHAT_ID = re.compile(CHAT_PATTERN)
M = TypeVar("M", bound=BaseModel)


class ChatOnly(BaseModel):
    """The body of `POST /api/chat/stop` and `/api/chat/new`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first request
    chat: str = Field("default", pattern=CHAT_PATTERN)


STOPPING = "roost is stopping, so this message was not answered: send it again in a moment"


DENIED = (
    "missing or wrong access token (Authorization: Bearer <token>). On the roost's "
    "machine, `roost web-token --link` prints the page's link with its token; a person "
    "with a page of their own uses the web_token of their [tenants.NAME] table"
)
FIELD_NAME = re.compile(r"^[A-Za-z0-9_]{1,40}$")  # a field name shown back as sent
CHAT_RULE = "1-64 of A-Z a-z 0-9 _ -"


def _field(loc: tuple[int | str, ...]) -> str:
    """Where in the body an error is (`chat`, `attachments.0`); a name the client made up
    is shown only when it is short and plain (never a long or odd value sent back)."""
    names = [str(part) for part in loc]
    if any(not FIELD_NAME.fullmatch(name) for name in names):
        return "a field"
    return ".".join(names)


def invalid(exc: ValidationError, model: type[BaseModel]) -> str:
    """Why a body is not `model`: each wrong field by name (at most three), and what is
    wrong with it, never the value sent (pydantic's messages quote none)."""
    said = []
    for e in exc.errors()[:3]:
        field = _field(e["loc"])
        if e["type"] == "missing":
            reason = "missing"
        elif e["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(e["loc"][-1]), list(model.model_fields), n=1)
            reason = "not a field here" + (f" (did you mean {close[0]}?)" if close else "")
        elif e["loc"] == ("chat",) and e["type"] == "string_pattern_mismatch":
            reason = CHAT_RULE
        else:
            reason = e["msg"]
        said.append(f"{field}: {reason}" if field else reason)
    return "; ".join(said)


def error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def answering_stopped() -> None:
    """Called where a request's task caught the cancellation roost's stop sent its core
    call (`Core.drain`: one still running at the grace's end, or one that came during the
    drain): it is taken back, so the request is answered (a 503, an event stream's `final`
    saying so) and ends as any other, not cut off with its connection."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def stopped() -> web.Response:
    """`answering_stopped`, and the 503 that says roost is stopping."""
    answering_stopped()
    return error(503, STOPPING)


def token_key(token: bytes) -> str:
    """A token's name in counts and logs: a short hash, never the token."""
    return hashlib.sha256(token).hexdigest()[:16]


def _table(tokens: Mapping[str, str]) -> list[tuple[bytes, str, str]]:
    """(the token's bytes, its tenant, its `token_key`) of each configured token: the key
    hashed once per (re)load, not on every request."""
    return [(token.encode(), tenant, token_key(token.encode())) for token, tenant in tokens.items()]


class WebGate:
    def __init__(
        self,
        tokens: Mapping[str, str],
        local_tenant: str,
        barred: Callable[[str], bool] = lambda tenant: False,
    ) -> None:
        self._tokens = _table(tokens)
        self.local_tenant = local_tenant
        self._barred = barred

    def replace(self, tokens: Mapping[str, str]) -> None:
        """Reloaded tokens, in one step: a token no longer configured is refused
        from the next request on (a removed tenant's page reads nothing more)."""
        self._tokens = _table(tokens)

    def keys(self) -> list[str]:
        """The `token_key` of every configured token."""
        return [key for _, _, key in self._tokens]

    def caller(self, request: web.Request) -> tuple[str, str] | None:
        """(tenant, token_key) of the request's bearer token, or None (no token, a
        wrong one, a barred tenant's)."""
        return self._found(request)

    def tenant(self, request: web.Request) -> str | None:
        """The tenant of the request's bearer token, or None (no token, a wrong one)."""
        found = self._found(request)
        return found[0] if found is not None else None

    def _found(self, request: web.Request) -> tuple[str, str] | None:
        """(tenant, `token_key`) of the configured token the request's bearer token
        matches, or None."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        # a header's non-UTF-8 bytes arrive as lone surrogates (aiohttp decodes with
        # surrogateescape): encoded so they cannot fail, they match no token (a 401)
        given = token.strip().encode("utf-8", "surrogatepass")
        found = None
        for known, tenant, key in self._tokens:  # all of them: the time says nothing of which
            if hmac.compare_digest(given, known):
                found = tenant, key
        if found is None or self._barred(found[0]):
            return None
        return found

    def identity(self, tenant: str) -> str:
        return "local" if tenant == self.local_tenant else f"tenant:{tenant}"

    def tenant_of(self, identity: str) -> str:
        """The tenant whose web `identity` this is (the inverse of `identity`)."""
        return self.local_tenant if identity == "local" else identity.removeprefix("tenant:")

    @staticmethod
    def deny() -> web.Response:
        """The 401 of every refused token: one text for no token, a wrong one and a
        barred tenant's, so it says nothing of which tenants exist."""
        return web.json_response(
            {"error": DENIED}, status=401, headers={"WWW-Authenticate": "Bearer"}
        )

    @staticmethod
    async def body(request: web.Request, model: type[M], example: str) -> M | web.Response:
        """The request's JSON body as `model`; a 400/413 response saying why otherwise."""
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return error(413, f"the request body is too large (limit {MAX_BODY:,} bytes)")
        except ConnectionError:  # the client went, or stalled and was dropped (web_conns)
            return error(408, "the request body did not arrive in time")
        try:
            return model.model_validate(decode_json_object(raw))
        except (BodyError, ValidationError) as exc:
            reason = invalid(exc, model) if isinstance(exc, ValidationError) else str(exc)
            return error(400, f"send JSON like {example} ({reason})")

    @staticmethod
    def chat(request: web.Request) -> str | web.Response:
        chat = request.query.get("chat", "default")
        if not CHAT_ID.fullmatch(chat):
            return error(400, f"chat: {CHAT_RULE}")
        return chat

    def key(self, request: web.Request) -> SessionKey | web.Response:
        """The web session the request names: its token's tenant and `?chat=`
        (401 without a known token, 400 for a bad chat id)."""
        tenant = self.tenant(request)
        if tenant is None:
            return self.deny()
        chat = self.chat(request)
        if isinstance(chat, web.Response):
            return chat
        return SessionKey(tenant, "web", chat)

    @staticmethod
    def number(request: web.Request, name: str) -> int | web.Response | None:
        """An optional non-negative integer query parameter."""
        value = request.query.get(name)
        if value is None:
            return None
        if not (value.isascii() and value.isdigit()) or len(value) > 18:
            return error(400, f"{name}: a whole number")
        return int(value)

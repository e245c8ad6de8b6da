"""The Matrix client-server API for the channel: mautrix's HTTP layer, our retries.

`mautrix.api.HTTPAPI` builds the requests (paths escaped by its
`PathBuilder`, the bearer token, JSON in and out); `_Transport` overrides
its one response hook so a failure becomes a `MatrixError` carrying the
HTTP status, the `errcode` and `retry_after_ms` (M_LIMIT_EXCEEDED), never
the server's message text. `MatrixClient` retries 429 (waiting at least
`retry_after_ms`, capped), 5xx and a dropped connection with backoff
(`common.retry.Backoff`); a `sync` long-poll gets its own, longer socket
timeout. Downloads go through the authenticated media API
(`/_matrix/client/v1/media/download`), streamed and cut off past a limit;
an mxc:// URI whose server name or media id is not the spec's grammar
(`MXC`: a host name, IPv4 or [IPv6] address with an optional port; a media
id of `[A-Za-z0-9_-]`) is refused before any request.
mautrix's request log (which would print request bodies at DEBUG) is held
at INFO: no message text reaches the log.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
from mautrix.api import HTTPAPI, Method, Path
from mautrix.util.logging import TraceLogger
from yarl import URL

from bridge.channels.common.retry import Backoff
from bridge.channels.matrix.events import ACCESS_KEYS, PREVIEWS, Access, access_value

log = logging.getLogger("bridge.channels.matrix")
_wire = TraceLogger("bridge.channels.matrix.http", logging.INFO)  # mautrix logs request bodies
# at DEBUG: this logger is held at INFO (whatever the root's level); it reports to ours
_wire.parent = log
CHUNK = 64 * 1024
Sleep = Callable[[float], Awaitable[None]]
JSON = dict[str, Any]
# mxc://<server name>/<media id>: a DNS name, IPv4 or [IPv6] literal, optional port
MXC = re.compile(
    r"mxc://(?:[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,126}|\[[0-9A-Fa-f:.]{2,45}\])"
    r"(?::[0-9]{1,5})?"
    r"/[A-Za-z0-9_\-]{1,255}"
)
DEFAULTS: Access = {"m.room.history_visibility": "shared", "m.room.join_rules": "invite"}


class MatrixError(Exception):
    """A failed call: HTTP status (0: no answer), the Matrix errcode, the asked wait."""

    def __init__(self, status: int, errcode: str = "", retry_after_ms: int | None = None) -> None:
        super().__init__(f"HTTP {status}" + (f" {errcode}" if errcode else ""))
        self.status, self.errcode, self.retry_after_ms = status, errcode, retry_after_ms

    @property
    def retryable(self) -> bool:
        return self.status in (0, 429) or self.status >= 500 or self.errcode == "M_LIMIT_EXCEEDED"


class TooLarge(Exception):
    """A download past its limit: `size` is what was declared or read so far."""

    def __init__(self, size: int) -> None:
        super().__init__(f"larger than the limit ({size} bytes)")
        self.size = size


class _Transport(HTTPAPI):
    """mautrix's HTTPAPI whose failures keep what we need (and nothing they say)."""

    async def _send(
        self,
        method: Method,
        url: URL,
        content: Any,
        query_params: dict[str, str],
        headers: dict[str, str],
    ) -> tuple[Any, aiohttp.ClientResponse]:
        request = self.session.request(
            str(method), url, data=content, params=query_params, headers=headers
        )
        async with request as response:
            if 200 <= response.status < 300:
                return await response.json(content_type=None), response
            errcode, wait = "", None
            try:
                body = await response.json(content_type=None)
            except (ValueError, aiohttp.ClientError):
                body = None
            if isinstance(body, dict):
                errcode = str(body.get("errcode", ""))[:64]
                asked = body.get("retry_after_ms")
                wait = int(asked) if isinstance(asked, int | float) and asked >= 0 else None
            raise MatrixError(response.status, errcode, wait)


class MatrixClient:
    """One bot account's calls, with retries. Make it inside the running loop."""

    def __init__(
        self,
        homeserver: str,
        token: str,
        *,
        backoff: Backoff | None = None,
        sleep: Sleep = asyncio.sleep,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        self.homeserver = homeserver.rstrip("/")
        self.backoff = backoff or Backoff(first_s=0.5, max_s=8.0, attempts=5)
        self._sleep = sleep
        self._token = token
        self.session = session or aiohttp.ClientSession()
        self.api = _Transport(self.homeserver, token, client_session=self.session, log=_wire)
        self.api.default_retry_count = 0  # our retries, not mautrix's fixed 4 s ones

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def aclose(self) -> None:
        await self.session.close()

    async def call(
        self,
        method: Method,
        path: Any,
        content: Any = None,
        query: Mapping[str, str] | None = None,
        headers: dict[str, str] | None = None,
        backoff: Backoff | None = None,
    ) -> JSON:
        """One request, retried on 429, 5xx and a lost connection; its JSON answer."""
        policy = backoff or self.backoff
        for attempt in range(1, policy.attempts + 1):
            try:
                got = await self.api.request(
                    method, path, content, headers=headers, query_params=query, retry_count=0
                )
                return got if isinstance(got, dict) else {}
            except MatrixError as exc:
                error = exc
            except (TimeoutError, aiohttp.ClientError) as exc:
                error = MatrixError(0, type(exc).__name__)
            except Exception as exc:  # mautrix wraps a dropped connection in its own error
                if type(exc).__name__ != "MatrixConnectionError":
                    raise
                error = MatrixError(0, "connection")
            if not error.retryable or attempt == policy.attempts:
                raise error
            asked = error.retry_after_ms / 1000 if error.retry_after_ms is not None else None
            wait = policy.delay(attempt, asked)
            log.info("matrix: %s, retrying in %.1f s", error, wait)
            await self._sleep(wait)
        raise AssertionError("unreachable")

    # -- the calls the channel makes ------------------------------------------------------

    async def whoami(self) -> str:
        got = await self.call(Method.GET, Path.v3.account.whoami)
        return str(got.get("user_id", ""))

    async def sync(self, since: str | None, timeout_ms: int, filter_json: str) -> JSON:
        query = {"timeout": str(timeout_ms), "filter": filter_json}
        if since:
            query["since"] = since
        return await self.call(Method.GET, Path.v3.sync, query=query, backoff=self.backoff.once())

    async def send(self, room_id: str, content: JSON, txn_id: str, kind: str = "") -> str:
        """Send one event (`m.room.message` unless `kind`); its event id."""
        path = Path.v3.rooms[room_id].send[kind or "m.room.message"][txn_id]
        got = await self.call(Method.PUT, path, content)
        return str(got.get("event_id", ""))

    async def typing(self, room_id: str, user_id: str, on: bool, timeout_ms: int = 25_000) -> None:
        body: JSON = {"typing": on, "timeout": timeout_ms} if on else {"typing": False}
        await self.call(Method.PUT, Path.v3.rooms[room_id].typing[user_id], body)

    async def receipt(self, room_id: str, event_id: str) -> None:
        path = Path.v3.rooms[room_id].receipt["m.read"][event_id]
        await self.call(Method.POST, path, {})

    async def join(self, room_id: str) -> None:
        await self.call(Method.POST, Path.v3.rooms[room_id].join, {})

    async def leave(self, room_id: str, reason: str = "") -> None:
        await self.call(
            Method.POST, Path.v3.rooms[room_id].leave, {"reason": reason} if reason else {}
        )

    async def present(self, room_id: str) -> int:
        """How many people are in the room now: joined or invited (an invited person
        may join at any time and read what was said)."""
        path = Path.v3.rooms[room_id].members
        got = await self.call(Method.GET, path, query={"not_membership": "leave"})
        chunk = got.get("chunk")
        if not isinstance(chunk, list):
            raise MatrixError(502, "M_BAD_MEMBERS")
        return sum(
            1
            for event in chunk
            if isinstance(event, dict)
            and isinstance(event.get("content"), dict)
            and event["content"].get("membership") in ("join", "invite")
        )

    async def access(self, room_id: str) -> Access:
        """The room's history visibility and join rule now (an absent event: the spec's
        default, `shared` and `invite`)."""
        found: Access = {}
        for kind in ACCESS_KEYS:
            path = Path.v3.rooms[room_id].state[kind][""]
            try:
                content = await self.call(Method.GET, path)
            except MatrixError as exc:
                if exc.status != 404 or exc.errcode != "M_NOT_FOUND":
                    raise
                found[kind] = DEFAULTS[kind]
                continue
            found[kind] = access_value(kind, content)
        return found

    async def previews_off(self, room_id: str) -> bool:
        """Make sure `PREVIEWS` says `{"disable": true}` in the room; whether it had to
        be set (False: it already was). A room where the bot may not set it raises
        `MatrixError` (403 M_FORBIDDEN)."""
        path = Path.v3.rooms[room_id].state[PREVIEWS][""]
        try:
            content = await self.call(Method.GET, path)
        except MatrixError as exc:
            if exc.status != 404 or exc.errcode != "M_NOT_FOUND":
                raise
            content = {}
        if content.get("disable") is True:
            return False
        await self.call(Method.PUT, path, {**content, "disable": True})
        return True

    async def upload(self, data: bytes, mime: str, name: str) -> str:
        """Put bytes in the media repository; their mxc:// URI."""
        got = await self.call(
            Method.POST,
            "/_matrix/media/v3/upload",
            data,
            query={"filename": name},
            headers={"Content-Type": mime},
        )
        uri = str(got.get("content_uri", ""))
        if not uri.startswith("mxc://"):
            raise MatrixError(502, "M_BAD_UPLOAD")
        return uri

    async def download(self, mxc: str, limit: int) -> bytes:
        """An mxc:// file's bytes, at most `limit` (`TooLarge` past it, declared or read)."""
        if not MXC.fullmatch(mxc):
            raise MatrixError(400, "M_BAD_MXC")
        server, _, media_id = mxc.removeprefix("mxc://").partition("/")
        url = (
            f"{self.homeserver}/_matrix/client/v1/media/download/"
            f"{quote(server, safe='')}/{quote(media_id, safe='')}"
        )
        try:
            async with self.session.get(url, headers=self.auth, allow_redirects=False) as resp:
                if resp.status != 200:
                    raise MatrixError(resp.status, "download")
                if resp.content_length is not None and resp.content_length > limit:
                    raise TooLarge(resp.content_length)
                parts: list[bytes] = []
                size = 0
                async for chunk in resp.content.iter_chunked(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise TooLarge(size)
                    parts.append(chunk)
                return b"".join(parts)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise MatrixError(0, type(exc).__name__) from None

"""The web channel: the chat page and a small JSON/SSE API over aiohttp.

Routes: `GET /` (the page), `GET /static/*` (its ES modules), `GET /healthz`,
and, with `Authorization: Bearer <token>`, `GET /api/commands`,
`POST /api/chat` (`{"text", "chat"?, "quote"?}` -> `{"reply", "kind", "files"?}`) and
`POST /api/chat/stream` (Server-Sent Events: `delta` pieces, then one
`final`), `GET /api/events?chat=C` (proactive messages while the page is
open, `bridge.channels.web_push`) and `GET /api/outbox?chat=C&after=ID` (the
ones it missed); `GET /metrics` (Prometheus text, only when the roost passes
a `metrics` renderer: `[web] metrics = true`). A reply's files come as
`files: [{"name", "mime", "size", "url"}]`, each `url` a one-time signed
`GET /files/<token>` link (`bridge.channels.web_files`; no bearer needed).
The server runs inside roost's loop (AppRunner/TCPSite); other channels may
add routes (the Telegram webhook) before it starts.

Every route, added here or by another channel, first checks `Host` against
the allow-list (`web_input.HostAllowList`, DNS rebinding) and answers 421
otherwise; a body that is not the expected JSON object gets a 400 (413 when
too large) with a JSON `error`, never a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import ValidationError

from bridge.channels import ChannelStartError
from bridge.channels.web_files import FileLinks
from bridge.channels.web_input import BodyError, ChatRequest, HostAllowList, decode_json_object
from bridge.channels.web_push import WebPush, sse
from bridge.types.messages import Final, Handle, Inbound

log = logging.getLogger(__name__)

JS_DIR = Path(__file__).resolve().parents[2] / "js"
MAX_BODY = 1024 * 1024
STATIC_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}\.(js|css)$")
STATIC_TYPES = {"js": "text/javascript", "css": "text/css"}
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
CHAT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# (chat, after_id) -> the chat's outbox messages newer than after_id, oldest first
Recent = Callable[[str, int], list[dict[str, Any]]]
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class WebChannel:
    name = "web"

    def __init__(
        self,
        handle: Handle,
        command_list: Callable[[], list[dict[str, str]]],
        token: str,
        host: str = "127.0.0.1",
        port: int = 8787,
        js_dir: Path = JS_DIR,
        allowed_hosts: Iterable[str] = (),
        *,
        recent: Recent | None = None,
        metrics: Callable[[], str] | None = None,
        files: FileLinks | None = None,
    ) -> None:
        self._handle = handle
        self._files = files
        self._recent = recent
        self.deliver = WebPush()  # the outbox's deliver for channel "web"
        self._closing = asyncio.Event()
        self._command_list = command_list
        self._token = token.encode()
        self._host, self._port = host, port
        self._js = js_dir
        self._hosts = HostAllowList(host, allowed_hosts)
        self.app = web.Application(
            client_max_size=MAX_BODY, middlewares=[self._host_check, self._headers]
        )
        self.app.router.add_get("/", self._index)
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/api/commands", self._commands)
        self.app.router.add_post("/api/chat", self._chat)
        self.app.router.add_post("/api/chat/stream", self._chat_stream)
        self.app.router.add_get("/api/events", self._events)
        self.app.router.add_get("/api/outbox", self._outbox)
        self.app.router.add_get("/static/{name}", self._static)
        if files is not None:  # the link is the credential (signed, one-time, short-lived)
            self.app.router.add_get("/files/{token}", self._download)
        if metrics is not None:  # off by default: no route, so a 404 like any unknown path
            self._metrics = metrics
            self.app.router.add_get("/metrics", self._metrics_text)
        self._runner: web.AppRunner | None = None
        self.port = port

    async def start(self) -> None:
        self._runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=2.0
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise ChannelStartError(
                f"the web bridge cannot listen on {self._host}:{self._port}: {exc.strerror}. "
                "Another roost (or program) may use it: stop it or set ROOST_WEB__PORT."
            ) from None
        server = site._server
        if isinstance(server, asyncio.Server) and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self._hosts.listen_on(self.port)
        log.info("web bridge listening on http://%s:%d/", self._host, self.port)

    async def stop(self) -> None:
        self._closing.set()  # open event streams end, so cleanup does not wait on them
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _host_check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Refuse any `Host` not on the allow-list (DNS rebinding) before any route runs."""
        if not self._hosts.allows(request.headers.get("Host")):
            return web.json_response(
                {
                    "error": "this roost does not serve that host name; the operator can "
                    "add it to [web] allowed_hosts (ROOST_WEB__ALLOWED_HOSTS)"
                },
                status=421,
                headers=SECURITY_HEADERS,
            )
        return await handler(request)

    @web.middleware
    async def _headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        if not response.prepared:
            for key, value in SECURITY_HEADERS.items():
                response.headers.setdefault(key, value)
        return response

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return False
        return hmac.compare_digest(token.strip().encode(), self._token)

    def _deny(self) -> web.Response:
        return web.json_response(
            {"error": "missing or wrong access token (Authorization: Bearer <token>)"},
            status=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    async def _index(self, request: web.Request) -> web.StreamResponse:
        page = self._js / "index.html"
        if not page.is_file():
            return web.Response(text="roost: the web page is not installed", status=500)
        return web.FileResponse(page)

    async def _static(self, request: web.Request) -> web.StreamResponse:
        """Top-level page files only (no sub-directories, tests or dotfiles)."""
        name = request.match_info["name"]
        kind = STATIC_TYPES.get(name.rsplit(".", 1)[-1]) if STATIC_NAME.fullmatch(name) else None
        path = self._js / name
        if kind is None or not path.is_file() or path.is_symlink():
            raise web.HTTPNotFound()
        return web.Response(body=path.read_bytes(), content_type=kind, charset="utf-8")

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _metrics_text(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._deny()
        body = self._metrics().encode()
        return web.Response(body=body, headers={"Content-Type": PROMETHEUS_TEXT})

    async def _commands(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return self._deny()
        return web.json_response({"commands": self._command_list()})

    async def _parse(self, request: web.Request) -> ChatRequest | web.Response:
        if not self._authorized(request):
            return self._deny()
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.json_response(
                {"error": f"the request body is too large (limit {MAX_BODY:,} bytes)"},
                status=413,
            )
        try:
            return ChatRequest.model_validate(decode_json_object(raw))
        except (BodyError, ValidationError) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            return web.json_response(
                {"error": f'send JSON like {{"text": "hello"}} ({reason})'}, status=400
            )

    def _inbound(self, req: ChatRequest) -> Inbound:
        return Inbound("web", "local", req.chat, req.text, uuid.uuid4().hex, quoted=req.quote)

    async def _chat(self, request: web.Request) -> web.Response:
        parsed = await self._parse(request)
        if isinstance(parsed, web.Response):
            return parsed
        final = await self._handle(self._inbound(parsed), None)
        body = self._final(final)
        return web.json_response({"reply": body.pop("text"), **body})

    async def _chat_stream(self, request: web.Request) -> web.StreamResponse:
        parsed = await self._parse(request)
        if isinstance(parsed, web.Response):
            return parsed
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", **SECURITY_HEADERS}
        )
        await response.prepare(request)
        gone = False

        async def on_delta(piece: str) -> None:
            nonlocal gone
            if gone:
                return
            try:
                await response.write(sse("delta", {"text": piece}))
            except (ConnectionResetError, RuntimeError):
                gone = True  # the page went away; the turn still completes and is stored

        final = await self._handle(self._inbound(parsed), on_delta)
        if not gone:
            try:
                await response.write(sse("final", self._final(final)))
                await response.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
        return response

    def _chat_param(self, request: web.Request) -> str | web.Response:
        chat = request.query.get("chat", "default")
        if not CHAT_ID.fullmatch(chat):
            return web.json_response({"error": "chat: 1-64 of A-Z a-z 0-9 _ -"}, status=400)
        return chat

    async def _outbox(self, request: web.Request) -> web.Response:
        """The chat's proactive messages after `after` (an entry id): what the page missed."""
        if not self._authorized(request):
            return self._deny()
        chat = self._chat_param(request)
        if isinstance(chat, web.Response):
            return chat
        after = request.query.get("after", "0")
        if not after.isdigit() or len(after) > 18:
            return web.json_response({"error": "after: an entry id"}, status=400)
        messages = self._recent(chat, int(after)) if self._recent is not None else []
        return web.json_response({"messages": messages})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Server-Sent Events: one `message` per proactive message while this is open."""
        if not self._authorized(request):
            return self._deny()
        chat = self._chat_param(request)
        if isinstance(chat, web.Response):
            return chat
        return await self.deliver.stream(request, chat, self._closing, SECURITY_HEADERS)

    async def _download(self, request: web.Request) -> web.StreamResponse:
        assert self._files is not None
        return await self._files.download(request, SECURITY_HEADERS)

    def _final(self, final: Final) -> dict[str, Any]:
        """A reply as JSON: text, kind, and download links for its files (if any)."""
        body: dict[str, Any] = {"text": final.text, "kind": final.kind}
        if final.files and self._files is not None:
            body["files"] = self._files.offer(final.files)
        if final.actions:  # one-tap replies: the page shows buttons that send `command`
            body["actions"] = [{"label": a.label, "command": a.command} for a in final.actions]
        return body

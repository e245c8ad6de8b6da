"""The web channel: the chat page and a small JSON/SSE API over aiohttp.

Routes: `GET /` (the page), `GET /static/*` (its ES modules), `GET /healthz`,
and, with `Authorization: Bearer <token>`, `GET /api/commands`,
`POST /api/chat` (`{"text", "chat"?}` -> `{"reply", "kind"}`) and
`POST /api/chat/stream` (Server-Sent Events: `delta` pieces, then one
`final`). The server runs inside roost's loop (AppRunner/TCPSite); other
channels may add routes (the Telegram webhook) before it starts.

Every route, added here or by another channel, first checks `Host` against
the allow-list (`web_input.HostAllowList`, DNS rebinding) and answers 421
otherwise; a body that is not the expected JSON object gets a 400 (413 when
too large) with a JSON `error`, never a 500.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.channels import ChannelStartError
from bridge.channels.web_input import BodyError, HostAllowList, decode_json_object
from bridge.types.messages import Handle, Inbound

log = logging.getLogger(__name__)

JS_DIR = Path(__file__).resolve().parents[2] / "js"
MAX_BODY = 1024 * 1024
STATIC_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}\.(js|css)$")
STATIC_TYPES = {"js": "text/javascript", "css": "text/css"}
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


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    chat: str = Field("default", pattern=r"^[A-Za-z0-9_-]{1,64}$")


def _sse(event: str, data: dict[str, Any]) -> bytes:
    payload = json.dumps(data, ensure_ascii=False)
    return f"event: {event}\ndata: {payload}\n\n".encode()


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
    ) -> None:
        self._handle = handle
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
        self.app.router.add_get("/static/{name}", self._static)
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
        return Inbound("web", "local", req.chat, req.text, uuid.uuid4().hex)

    async def _chat(self, request: web.Request) -> web.Response:
        parsed = await self._parse(request)
        if isinstance(parsed, web.Response):
            return parsed
        final = await self._handle(self._inbound(parsed), None)
        return web.json_response({"reply": final.text, "kind": final.kind})

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
                await response.write(_sse("delta", {"text": piece}))
            except (ConnectionResetError, RuntimeError):
                gone = True  # the page went away; the turn still completes and is stored

        final = await self._handle(self._inbound(parsed), on_delta)
        if not gone:
            try:
                await response.write(_sse("final", {"text": final.text, "kind": final.kind}))
                await response.write_eof()
            except (ConnectionResetError, RuntimeError):
                pass
        return response

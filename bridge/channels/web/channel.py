"""The web channel: the chat page and a small JSON/SSE API over aiohttp.

Routes: `GET /` (the page), `GET /static/*` (its ES modules; `vendor/*` too),
`GET /healthz` (the server runs), `GET /readyz` (it can serve: the roost's
`ready` probe, e.g. the database answers; 503 otherwise), and, with
`Authorization: Bearer <token>` (`web_gate`: the token names the tenant, every
route is scoped to it), `GET /api/commands`,
`POST /api/chat` (`{"text", "chat"?, "quote"?, "attachments"?}` -> `{"reply", "kind",
"files"?}`; `attachments`: ids from `POST /api/upload`, `web_upload`),
the running answers (`POST /api/chat/stream`, `/api/chat/stop`,
`/api/chat/new`, `GET /api/chat/attach`: `web_turns`; with instances sharing
the home a stop reaches the one running the answer, `web_relay`, and an
attach follows it from another, `web_follow`), the history
(`GET /api/history`, `/api/conversations`: `web_history`; in time order with
the proactive posts, job runs and the page's slash commands: `web_timeline`,
the commands kept as they are answered: `web_kept`),
`GET /api/events?chat=C` (proactive messages while the page is
open, `bridge.channels.web.push`) and `GET /api/outbox?chat=C&after=ID` (the
ones it missed; each text, pushed or listed, once more through the tenant's
masker of now, `masks`, as the history is); `GET /metrics` (Prometheus
text, only when the roost passes a `metrics` renderer: `[web] metrics =
true`). A reply's files come as `files: [{"name", "mime", "size", "url"}]`,
each `url` a one-time signed `GET /files/<token>` link
(`bridge.channels.web.files`; no bearer needed). The server runs inside
roost's loop (AppRunner/TCPSite); other channels may add routes (the Telegram
webhook) before it starts.

Every route, added here or by another channel, first checks `Host` against
the allow-list (`web_input.HostAllowList`, DNS rebinding) and answers 421
otherwise; every response, the router's own 404/405 too, carries
`SECURITY_HEADERS` and `Server: roost` (no Python or aiohttp version); a
body that is not the expected JSON object gets a 400 (413 when too large)
with a JSON `error`, never a 500; a route that meets a full disk answers 507
with the reason (`bridge.core.diskfull`). A body sent with a
`Content-Encoding` is refused (415) before it is read, on every route;
request heads are capped, and aiohttp's own errors say nothing of the
request (`bridge.channels.web.request_limits`).

Connections pass `web_site.GuardedSite` (roost's accept loop, `web_conns`:
caps in all and per client, a descriptor reserve, header and body timeouts)
before aiohttp serves them; event streams hold a `web_streams` slot (a cap
per token and per tenant, 429 past it; ended when a reload drops their token).
"""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from bridge.channels import ChannelStartError
from bridge.channels.web.commandlog import CommandLog
from bridge.channels.web.conns import UNBUDGETED, ConnLimits
from bridge.channels.web.files import FileLinks
from bridge.channels.web.follow import Follow
from bridge.channels.web.gate import MAX_BODY, WebGate, error, stopped
from bridge.channels.web.history import WebHistory
from bridge.channels.web.input import ChatRequest, HostAllowList
from bridge.channels.web.kept import kept_commands
from bridge.channels.web.push import WebPush
from bridge.channels.web.relay import StopRelay, serving
from bridge.channels.web.request_limits import HANDLER_ARGS, RoostRunner, refused_encoding
from bridge.channels.web.site import GuardedSite, WebGuard
from bridge.channels.web.static import JS_DIR, PageFiles
from bridge.channels.web.streams import StreamSlots
from bridge.channels.web.timeline import Timeline
from bridge.channels.web.turns import TURNS, ProgressHandle, WebTurns
from bridge.channels.web.upload import WebUploads
from bridge.core.conversations import ConversationArchive
from bridge.core.diskfull import DISK_FULL, disk_full
from bridge.core.quota import TenantQuota
from bridge.core.running import RunningTurns
from bridge.core.sessions import SessionKey
from bridge.storage.protocol import Database
from bridge.types.masked import TextMask
from bridge.types.messages import Final

log = logging.getLogger(__name__)

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# (chat, after_id) -> the local tenant's outbox messages newer than after_id, oldest first
Recent = Callable[[str, int], Awaitable[list[dict[str, Any]]]]
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


async def _no_version(request: web.Request, response: web.StreamResponse) -> None:
    """`Server: roost`, not aiohttp's default naming the Python and aiohttp versions."""
    response.headers["Server"] = "roost"


def listen_advice(errno_: int | None) -> str:
    """What to change when the page's socket cannot listen: the port another program
    holds, or a host this machine does not have (each by its file key and variable)."""
    if errno_ == errno.EADDRNOTAVAIL:
        return (
            "This machine has no such address: set [web] host (ROOST_WEB__HOST) to one of "
            "its own, e.g. 127.0.0.1."
        )
    return (
        "Another roost (or program) may use it: stop it or set [web] port "
        "(ROOST_WEB__PORT) to a free one."
    )


class WebChannel:
    name = "web"

    def __init__(
        self,
        handle: ProgressHandle,
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
        turns: RunningTurns[SessionKey] | None = None,
        archive: ConversationArchive | None = None,
        local_tenant: str = "local",
        tenant_tokens: Mapping[str, str] | None = None,
        detach_grace_s: float = 30.0,
        inbox: Callable[[str], Path] | None = None,  # a tenant's TenantDirs.inbox: uploads on
        attachment_bytes: int = 20 * 1024 * 1024,
        limits: ConnLimits = UNBUDGETED,  # connections and streams (the app's descriptor budget)
        barred: Callable[[str], bool] = lambda tenant: False,  # a tenant being forgotten
        quota: TenantQuota | None = None,  # [quota] tenant_bytes: uploads must fit
        ready: Callable[[], Awaitable[str | None]] | None = None,  # None, or why not ready
        relay: StopRelay | None = None,  # instances share the home: `web_relay`
        follow: Follow | None = None,  # and attach follows their turns: `web_follow`
        masks: Callable[[str], TextMask] | None = None,  # a tenant's masker: history on its way out
        database: Database | None = None,  # the history's posts and job runs
        commands: Callable[[str], Path] | None = None,  # a tenant's folder of page commands
    ) -> None:
        timeline = None  # the history in time order: posts, job runs, commands (`timeline`)
        if database is not None and archive is not None:
            commands_log = None if commands is None else CommandLog(commands)
            timeline = Timeline(database, commands_log)
            if commands_log is not None:
                handle = kept_commands(handle, commands_log, timeline, archive, masks, local_tenant)
        self._handle = handle
        self._ready = ready
        self._files = files
        self._recent = recent
        self._masks = masks
        self.deliver = WebPush(masks=masks)  # the outbox's deliver for channel "web"
        self._command_list = command_list
        tokens = {**(tenant_tokens or {}), token: local_tenant}
        self._gate = WebGate(tokens, local_tenant, barred)
        self._token = token
        running = turns if turns is not None else RunningTurns()
        self._host, self._port = host, port
        self._hosts = HostAllowList(host, allowed_hosts)
        self.guard = WebGuard(limits)
        self.streams = StreamSlots(limits.streams_per_token, limits.streams_per_tenant)
        self.app = web.Application(
            client_max_size=MAX_BODY,
            middlewares=[self.guard.middleware, self._checked],
        )
        pages = PageFiles(js_dir)
        self.app.on_response_prepare.append(_no_version)
        self.app.router.add_get("/", pages.index)
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self.app.router.add_get("/api/commands", self._commands)
        self.app.router.add_post("/api/chat", self._chat)
        self.turns = WebTurns(
            self._gate,
            handle,
            running,
            archive,
            self._final,
            SECURITY_HEADERS,
            detach_grace_s,
            streams=self.streams,
            relay=relay,
            follow=follow,
        )
        self._relay_stop: Callable[[], Awaitable[None]] | None = None
        self.turns.mount(self.app)
        self.app[TURNS] = self.turns  # edit/regenerate streams hold its slots (`web_branch`)
        if inbox is not None:  # POST /api/upload (bridge.channels.web.upload)
            self.turns.uploads = WebUploads(self._gate, inbox, attachment_bytes, quota=quota)
            self.turns.uploads.mount(self.app)
        if archive is not None:
            WebHistory(
                self._gate,
                archive,
                running,
                elsewhere=self.turns.elsewhere,
                masks=masks,
                timeline=timeline,
            ).mount(self.app)
        self.app.router.add_get("/api/events", self._events)
        self.app.router.add_get("/api/outbox", self._outbox)
        self.app.router.add_get("/static/{name}", pages.static)
        self.app.router.add_get("/static/vendor/{name}", pages.static)
        if files is not None:  # the link is the credential (signed, one-time, short-lived)
            self.app.router.add_get("/files/{token}", self._download)
        if metrics is not None:  # off by default: no route, so a 404 like any unknown path
            self._metrics = metrics
            self.app.router.add_get("/metrics", self._metrics_text)
        self._runner: web.AppRunner | None = None
        self.port = port

    @property
    def handle(self) -> ProgressHandle:
        """The handle the page's turns go through (its commands and offers kept for the
        history: `kept.py`), for routes other modules add (`bridge.app.web_extras`)."""
        return self._handle

    @property
    def gate(self) -> WebGate:
        """Who asks (for routes other modules add: `bridge.app.web_extras`)."""
        return self._gate

    def final_json(self, final: Final, tenant: str) -> dict[str, Any]:
        """A reply to `tenant` as the page gets it (its files' links signed for its tree)."""
        return self._final(final, tenant)

    def set_tenant_tokens(self, tenant_tokens: Mapping[str, str]) -> None:
        """`[tenants.X] web_token`s as reloaded; the web token itself cannot change live.
        Streams opened with a token no longer configured end now."""
        self._gate.replace({**tenant_tokens, self._token: self._gate.local_tenant})
        ended = self.streams.keep(self._gate.keys())
        if ended:
            log.info("web: ended %d event streams whose token is no longer configured", ended)

    async def start(self) -> None:
        # the keep-alive timer also runs from the moment a connection opens until its
        # request head is complete: that is the header timeout
        # and each connection's head, body coding and aiohttp's own errors: `web_request_limits`
        self._runner = RoostRunner(
            self.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=2.0,
            keepalive_timeout=self.guard.limits.header_timeout_s,
            **HANDLER_ARGS,
        )
        await self._runner.setup()
        site = GuardedSite(self._runner, self._host, self._port, self.guard)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise ChannelStartError(
                f"the web bridge cannot listen on {self._host}:{self._port}: {exc.strerror}. "
                + listen_advice(exc.errno)
            ) from None
        self.port = site.port
        self._hosts.listen_on(self.port)
        if self.turns.relay is not None:  # other instances' stops of the turns run here
            self._relay_stop = serving(self.turns.relay, self.turns.stop_here)
        log.info("web bridge listening on http://%s:%d/", self._host, self.port)

    async def stop(self) -> None:
        if self._relay_stop is not None:
            await self._relay_stop()
            self._relay_stop = None
        # open event streams end, so cleanup does not wait on them; a request answering a
        # turn of its own ends by itself, answered (the drain stopped its turn)
        self.streams.close_all()
        self.turns.viewers.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @web.middleware
    async def _checked(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Refuse any `Host` not on the allow-list (DNS rebinding) and any coded body
        (415, `web_request_limits`) before any route runs; a route that meets a full
        disk says so (507), never a bare 500; the security headers on every response
        the route made, and on the router's own 404/405 (one middleware: each layer is
        a coroutine per request)."""
        if not self._hosts.allows(request.headers.get("Host")):
            return web.json_response(
                {
                    "error": "this roost does not serve that host name; the operator can "
                    "add it to [web] allowed_hosts (ROOST_WEB__ALLOWED_HOSTS)"
                },
                status=421,
                headers=SECURITY_HEADERS,
            )
        coded = refused_encoding(request.headers.get("Content-Encoding"))
        if coded is not None:  # before a byte of the body is read, whoever added the route
            coded.headers.update(SECURITY_HEADERS)
            return coded
        try:
            response: web.StreamResponse = await handler(request)
        except web.HTTPException as exc:  # the router's own 404/405 too
            for key, value in SECURITY_HEADERS.items():
                exc.headers.setdefault(key, value)
            raise
        except Exception as exc:
            if not disk_full(exc):
                raise
            log.warning("web: %s %s met a full disk", request.method, request.path)
            return error(507, DISK_FULL)
        if not response.prepared:
            headers = response.headers
            for key, value in SECURITY_HEADERS.items():
                headers.setdefault(key, value)
        return response

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def _readyz(self, request: web.Request) -> web.Response:
        """For a load balancer: 503 with a short fixed reason while this instance cannot
        serve (no token: the reason names no host, path or error text)."""
        reason = await self._ready() if self._ready is not None else None
        if reason is None:
            return web.json_response({"ok": True})
        return web.json_response({"ok": False, "reason": reason}, status=503)

    async def _metrics_text(self, request: web.Request) -> web.Response:
        if self._gate.tenant(request) != self._gate.local_tenant:
            return self._gate.deny()
        body = self._metrics().encode()
        return web.Response(body=body, headers={"Content-Type": PROMETHEUS_TEXT})

    async def _commands(self, request: web.Request) -> web.Response:
        if self._gate.tenant(request) is None:
            return self._gate.deny()
        return web.json_response({"commands": self._command_list()})

    async def _chat(self, request: web.Request) -> web.Response:
        """The answer in one response. The request holds an uncounted stream slot while
        it waits (an API client may run more turns at once than a page holds streams;
        the connection limits bound it): a reload that drops its token cancels its turn
        and closes its connection."""
        caller = self._gate.caller(request)
        if caller is None:
            return self._gate.deny()
        tenant, token = caller
        parsed = await self._gate.body(request, ChatRequest, '{"text": "hello"}')
        if isinstance(parsed, web.Response):
            return parsed
        waiting = asyncio.current_task()
        slot = self.turns.slot(request, token, tenant, waiting, counted=False, own_turn=True)
        assert slot is not None  # an uncounted slot is never refused
        try:
            return await self._answer(request, tenant, parsed)
        finally:
            self.turns.release(slot)

    async def _answer(self, request: web.Request, tenant: str, parsed: ChatRequest) -> web.Response:
        files = self.turns.attachments(tenant, parsed)
        if isinstance(files, web.Response):
            return files
        key = SessionKey(tenant, "web", parsed.chat)
        self.turns.viewers.enter(key)  # a waiting request keeps its turn, as an open stream does
        try:
            final = await self._handle(self.turns.inbound(tenant, parsed, files), None, None)
        except asyncio.CancelledError:  # the daemon stops (its drain cancels what still runs)
            return stopped()  # answered: the request ends with a reply, not a cut connection
        finally:
            self.turns.viewers.leave(key)
        body = self._final(final, tenant)
        return web.json_response({"reply": body.pop("text"), **body})

    async def _outbox(self, request: web.Request) -> web.Response:
        """The chat's proactive messages after `after` (an entry id): what the page missed."""
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        after = self._gate.number(request, "after")
        if isinstance(after, web.Response):
            return web.json_response({"error": "after: an entry id"}, status=400)
        local = key.tenant == self._gate.local_tenant  # other tenants' outboxes: not on the web
        messages = await self._recent(key.chat, after or 0) if local and self._recent else []
        if self._masks is not None and messages:  # stored masked, and masked once more now:
            shown = self._masks(key.tenant).mask  # a value vaulted since is not listed
            messages = [{**m, "text": shown(m["text"])} for m in messages]
        return web.json_response({"messages": messages})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Server-Sent Events: one `message` per proactive message while this is open."""
        key = self._gate.key(request)
        if isinstance(key, web.Response):
            return key
        caller = self._gate.caller(request)
        slot = self.streams.open(caller[1], key.tenant) if caller is not None else None
        if slot is None:
            return self.turns.too_many(key.tenant)
        try:
            return await self.deliver.stream(
                request, key.tenant, key.chat, slot.ended, SECURITY_HEADERS
            )
        finally:
            self.streams.release(slot)

    async def _download(self, request: web.Request) -> web.StreamResponse:
        assert self._files is not None
        return await self._files.download(request, SECURITY_HEADERS)

    def _final(self, final: Final, tenant: str) -> dict[str, Any]:
        """A reply to `tenant` as JSON: text, kind, download links for its files, its
        one-tap actions, and `unstored` for an answer the session did not store."""
        body: dict[str, Any] = {"text": final.text, "kind": final.kind}
        if final.files and self._files is not None:
            body["files"] = self._files.offer(final.files, tenant)
        if final.actions:  # one-tap replies: the page shows buttons that send `command`
            body["actions"] = [{"label": a.label, "command": a.command} for a in final.actions]
        if final.unstored:  # not among the stored turns: the page gives it no `seq`
            body["unstored"] = True
        return body

"""A fake WhatsApp Cloud API (Meta's Graph API) on 127.0.0.1, both directions.

As the Graph API (`base_url` = http://127.0.0.1:PORT/v23.0, what
`[whatsapp] api_base_url` points at), checked against Meta's documentation:

- `POST /{version}/{phone_number_id}/messages` with `Authorization: Bearer`:
  a message (`messaging_product: whatsapp`, `to`, `type` text | interactive
  | template | document | audio | image) answers `{"messaging_product":
  "whatsapp", "contacts": [{"input", "wa_id"}], "messages": [{"id":
  "wamid...."}]}` (Cloud API "Send messages"); a read receipt `{"status":
  "read", "message_id", "typing_indicator": {"type": "text"}}` answers
  `{"success": true}` ("Typing indicators"). Limits enforced as documented:
  text body 4096 characters; reply buttons 1-3, title <= 20, id <= 256, body
  <= 1024 ("Interactive reply buttons messages"); list rows <= 10, row title
  <= 24, button <= 20; template `name`, `language.code`, body parameters
  without new lines or tabs. A violation is HTTP 400 with error 100.
- `POST /{version}/{phone_number_id}/media` (multipart: `messaging_product`,
  `file`) -> `{"id"}`; `GET /{version}/{media-id}` -> `{"messaging_product",
  "url", "mime_type", "sha256", "file_size", "id"}` ("Media" reference; the
  URL is on this server, `/media/{id}`, and needs the bearer token like
  lookaside.fbsbx.com).
- Errors are Graph error objects `{"error": {"message", "type", "code",
  "error_subcode", "fbtrace_id"}}` (Graph API "Handling errors"; 401 code
  190 OAuthException for a bad token); `fail(...)` queues them (with
  `Retry-After` when asked) for the next calls.

As Meta's webhook sender: `text(...)`, `image(...)`, `voice(...)`,
`document(...)`, `press(...)`, `deliver(body)` POST to roost's
`/whatsapp/webhook` with `X-Hub-Signature-256: sha256=HMAC(app_secret, raw
body)` (bodies from `tests/fakes/whatsapp_payloads.py`). With `statuses` on,
every accepted message is followed by `sent` and `delivered` webhooks, or a
`failed` one with 131047 when it was free text more than 24 hours after the
person's last message (the customer-service window), as Meta does.

`sent` holds every accepted message body, `reads` every read receipt,
`uploads` every uploaded file; `wait_sent(n)` waits for the n-th message.
`hold()` keeps the messages sent from then on waiting (listed in `waiting`)
until `release()`; one whose sender went away meanwhile is not accepted.
`GET /_fake/sent` answers how many were accepted (a bench's fake runs in a
process of its own).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes import whatsapp_payloads as hooks

VERSION = "v23.0"
WINDOW_S = 24 * 3600
FREE_FORM = frozenset({"text", "interactive", "document", "audio", "image"})


@dataclass
class Failure:
    status: int
    code: int
    kind: str = "OAuthException"
    message: str = "(#130429) Rate limit hit"
    retry_after: int | None = None


@dataclass
class StoredMedia:
    data: bytes
    mime: str
    declared_size: int | None = None  # what GET /{media-id} claims (None: the truth)
    redirect_to: str | None = None  # the download answers 302 to this URL


@dataclass
class FakeWhatsApp:
    token: str
    app_secret: str
    phone_number_id: str = "106540352242922"
    statuses: bool = False
    clock: Any = time.time
    webhook_url: str = ""
    sent: list[dict[str, Any]] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)
    uploads: list[tuple[str, str, bytes]] = field(default_factory=list)  # name, mime, data
    media: dict[str, StoredMedia] = field(default_factory=dict)
    downloads: int = 0
    last_in: dict[str, float] = field(default_factory=dict)  # wa_id -> when they last wrote
    calls: int = 0

    def __post_init__(self) -> None:
        self._failures: deque[Failure] = deque()
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self._reports: set[asyncio.Task[None]] = set()
        self._sent_to: dict[str, int] = {}
        self._held = False
        self._drops = 0
        self._release = asyncio.Event()
        self.waiting: list[dict[str, Any]] = []  # messages held by `hold()`, as they came
        self.port = 0

    async def __aenter__(self) -> FakeWhatsApp:
        app = web.Application(client_max_size=200 * 1024 * 1024)
        app.router.add_post(f"/{VERSION}/{{pnid}}/messages", self._messages)
        app.router.add_post(f"/{VERSION}/{{pnid}}/media", self._upload)
        app.router.add_get(f"/{VERSION}/{{media_id}}", self._media_info)
        app.router.add_get("/media/{media_id}", self._download)
        app.router.add_get("/_fake/sent", self._count)  # for a bench in another process
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        # Meta keeps few connections open to one webhook; roost's web server caps those
        # of one client at [web] max_connections_per_client (64)
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._reports:
            task.cancel()
        await asyncio.gather(*self._reports, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{VERSION}"

    # -- test controls ---------------------------------------------------------------------

    def fail(self, *failures: Failure) -> None:
        self._failures.extend(failures)

    def drop(self, count: int = 1) -> None:
        """The next `count` messages are accepted (they show) but their connection is closed
        before an answer goes back: the sender cannot know they arrived."""
        self._drops += count

    def hold(self) -> None:
        """Messages sent from now on wait for `release()` before they are accepted (each is
        listed in `waiting` as it comes); read receipts are not held."""
        self._held = True
        self._release.clear()

    def release(self) -> None:
        """Accept the held messages now, but those whose sender went away (nothing sent)."""
        self._held = False
        self._release.set()

    def add_media(self, data: bytes, mime: str, **kw: Any) -> tuple[str, str]:
        """Store a file a person sends; (media id, sha256)."""
        media_id = str(secrets.randbelow(10**15) + 10**15)
        self.media[media_id] = StoredMedia(data, mime, **kw)
        return media_id, hashlib.sha256(data).hexdigest()

    async def wait_sent(self, count: int) -> list[dict[str, Any]]:
        """Until `count` messages were accepted (60 s at most: a hung test, not speed)."""
        async with asyncio.timeout(60), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= count)
        return self.sent

    async def wait_to(self, to: str, count: int) -> None:
        """Until `count` messages to `to` were accepted (60 s at most)."""
        async with asyncio.timeout(60), self._changed:
            await self._changed.wait_for(lambda: self._sent_to.get(to, 0) >= count)

    async def settle(self) -> None:
        """Until every status webhook the fake started has been answered by roost."""
        while self._reports:
            await asyncio.gather(*list(self._reports))

    def texts(self, to: str | None = None) -> list[str]:
        return [
            m["text"]["body"] for m in self.sent if m["type"] == "text" and to in (None, m["to"])
        ]

    # -- as Meta's webhook sender ------------------------------------------------------------

    def sign(self, raw: bytes) -> str:
        return "sha256=" + hmac.new(self.app_secret.encode(), raw, hashlib.sha256).hexdigest()

    async def post(self, raw: bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
        assert self._http is not None and self.webhook_url
        async with self._http.post(
            self.webhook_url,
            data=io.BytesIO(raw) if len(raw) > 1 << 20 else raw,  # a big body: from a buffer
            headers={"Content-Type": "application/json", **(headers or {})},
        ) as r:
            return r.status, await r.text()

    async def deliver(self, body: dict[str, Any]) -> int:
        raw = json.dumps(body).encode()  # Meta escapes non-ASCII as \\uXXXX, as json.dumps does
        status, _ = await self.post(raw, {"X-Hub-Signature-256": self.sign(raw)})
        return status

    async def _incoming(self, made: tuple[str, dict[str, Any]], wa_id: str) -> str:
        mid, body = made
        self.last_in[wa_id] = self.clock()
        status = await self.deliver(body)
        assert status == 200, status
        return mid

    async def text(self, wa_id: str, body: str, **kw: Any) -> str:
        return await self._incoming(hooks.text(self.phone_number_id, wa_id, body, **kw), wa_id)

    async def image(self, wa_id: str, data: bytes, caption: str | None = None, **media: Any) -> str:
        media_id, sha = self.add_media(data, "image/jpeg", **media)
        return await self._incoming(
            hooks.image(self.phone_number_id, wa_id, media_id, sha, caption), wa_id
        )

    async def voice(self, wa_id: str, ogg: bytes, **media: Any) -> str:
        media_id, sha = self.add_media(ogg, "audio/ogg; codecs=opus", **media)
        return await self._incoming(hooks.audio(self.phone_number_id, wa_id, media_id, sha), wa_id)

    async def document(
        self,
        wa_id: str,
        data: bytes,
        filename: str,
        mime: str,
        caption: str | None = None,
        **media: Any,
    ) -> str:
        media_id, sha = self.add_media(data, mime, **media)
        made = hooks.document(self.phone_number_id, wa_id, media_id, sha, filename, mime, caption)
        return await self._incoming(made, wa_id)

    async def press(self, wa_id: str, button_id: str, title: str, replied_to: str) -> str:
        made = hooks.button_reply(self.phone_number_id, wa_id, button_id, title, replied_to)
        return await self._incoming(made, wa_id)

    # -- as the Graph API ------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        given = request.headers.get("Authorization", "").encode()
        return hmac.compare_digest(given, f"Bearer {self.token}".encode())

    def _error(
        self, status: int, code: int, kind: str, message: str, retry_after: int | None = None
    ) -> web.Response:
        body = {
            "error": {
                "message": message,
                "type": kind,
                "code": code,
                "error_subcode": 2494010 if code == 100 else 0,
                "fbtrace_id": "A" + secrets.token_urlsafe(16),
            }
        }
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        return web.json_response(body, status=status, headers=headers)

    def _gate(self, request: web.Request) -> web.Response | None:
        self.calls += 1
        if not self._authorized(request):
            return self._error(
                401, 190, "OAuthException", "Invalid OAuth access token - Cannot parse access token"
            )
        if self._failures:
            f = self._failures.popleft()
            return self._error(f.status, f.code, f.kind, f.message, f.retry_after)
        return None

    async def _messages(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        if request.match_info["pnid"] != self.phone_number_id:
            return self._error(400, 100, "GraphMethodException", "Unsupported post request.")
        body = await request.json()
        if body.get("messaging_product") != "whatsapp":
            return self._error(
                400, 100, "OAuthException", "(#100) The parameter messaging_product is required."
            )
        if body.get("status") == "read":
            self.reads.append(body)
            return web.json_response({"success": True})
        problem = check_message(body)
        if problem:
            return self._error(400, 100, "OAuthException", f"(#100) {problem}")
        if self._held:
            self.waiting.append(body)
            await self._release.wait()
            if request.transport is None or request.transport.is_closing():
                return web.Response(status=499)  # the sender went away: nothing was sent
        mid = hooks.wamid(body["to"])
        async with self._changed:
            self.sent.append(body)
            self._sent_to[body["to"]] = self._sent_to.get(body["to"], 0) + 1
            self._changed.notify_all()
        if self._drops:
            self._drops -= 1
            assert request.transport is not None
            request.transport.close()  # accepted, and no answer ever goes back
            return web.Response(status=204)
        if self.statuses:
            task = asyncio.get_running_loop().create_task(self._report(body, mid))
            self._reports.add(task)
            task.add_done_callback(self._reports.discard)
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": body["to"], "wa_id": body["to"]}],
                "messages": [{"id": mid}],
            }
        )

    async def _count(self, request: web.Request) -> web.Response:
        return web.json_response({"sent": len(self.sent)})

    async def _report(self, body: dict[str, Any], mid: str) -> None:
        to = body["to"]
        closed = self.clock() - self.last_in.get(to, float("-inf")) > WINDOW_S
        if body["type"] in FREE_FORM and closed:
            await self.deliver(hooks.status(self.phone_number_id, mid, to, "failed", 131047))
            return
        for state in ("sent", "delivered"):
            await self.deliver(hooks.status(self.phone_number_id, mid, to, state))

    async def _upload(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        form = await request.post()
        upload = form.get("file")
        if form.get("messaging_product") != "whatsapp" or not isinstance(upload, web.FileField):
            return self._error(400, 100, "OAuthException", "(#100) Param file must be a file")
        data = upload.file.read()
        self.uploads.append((upload.filename, upload.content_type, data))
        media_id, _ = self.add_media(data, upload.content_type)
        return web.json_response({"id": media_id})

    async def _media_info(self, request: web.Request) -> web.Response:
        refused = self._gate(request)
        if refused is not None:
            return refused
        media_id = request.match_info["media_id"]
        stored = self.media.get(media_id)
        if stored is None:
            return self._error(400, 100, "GraphMethodException", "Unsupported get request.")
        size = stored.declared_size if stored.declared_size is not None else len(stored.data)
        return web.json_response(
            {
                "messaging_product": "whatsapp",
                "url": f"http://127.0.0.1:{self.port}/media/{media_id}?ext=1&hash=x",
                "mime_type": stored.mime,
                "sha256": hashlib.sha256(stored.data).hexdigest(),
                "file_size": size,
                "id": media_id,
            }
        )

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return web.Response(status=404)
        stored = self.media.get(request.match_info["media_id"])
        if stored is None:
            return web.Response(status=404)
        if stored.redirect_to is not None:
            raise web.HTTPFound(stored.redirect_to)
        self.downloads += 1
        return web.Response(body=stored.data, content_type=stored.mime.split(";")[0])


def check_message(body: dict[str, Any]) -> str:
    """What Meta would refuse in a message body ('' when it is fine)."""
    kind, to = body.get("type"), body.get("to")
    if not isinstance(to, str) or not to:
        return "The parameter to is required."
    if kind == "text":
        text = body.get("text", {}).get("body", "")
        if not text:
            return "The parameter text['body'] is required."
        if len(text) > 4096:
            return "Param text['body'] must be at most 4096 characters long."
        return ""
    if kind == "interactive":
        return _check_interactive(body.get("interactive", {}))
    if kind == "template":
        template = body.get("template", {})
        if not template.get("name") or not template.get("language", {}).get("code"):
            return "Template name and language code are required."
        for component in template.get("components", []):
            for param in component.get("parameters", []):
                text = param.get("text", "")
                if "\n" in text or "\t" in text or "     " in text:
                    return (
                        "Param text cannot have new-line/tab characters "
                        "or more than 4 consecutive spaces"
                    )
        return ""
    if kind in ("document", "audio", "image"):
        return (
            ""
            if body.get(kind, {}).get("id") or body.get(kind, {}).get("link")
            else f"{kind} id is required."
        )
    return f"Unsupported message type {kind}."


def _check_interactive(obj: dict[str, Any]) -> str:
    body = obj.get("body", {}).get("text", "")
    if not body or len(body) > 1024:
        return "Param interactive['body']['text'] must be 1-1024 characters."
    action = obj.get("action", {})
    if obj.get("type") == "button":
        buttons = action.get("buttons", [])
        titles = [b["reply"]["title"] for b in buttons]
        if not 1 <= len(buttons) <= 3 or len(set(titles)) != len(titles):
            return "Param interactive['action']['buttons'] must have 1-3 unique buttons."
        if any(
            len(t) > 20 or len(b["reply"]["id"]) > 256 for t, b in zip(titles, buttons, strict=True)
        ):
            return "Button title length invalid. Should be at most 20 characters."
        return ""
    if obj.get("type") == "list":
        rows = [row for s in action.get("sections", []) for row in s.get("rows", [])]
        if not rows or len(rows) > 10 or len(action.get("button", "")) > 20:
            return "Param interactive['action'] must have 1-10 rows and a button of at most 20."
        if any(len(r["title"]) > 24 or len(r["id"]) > 200 for r in rows):
            return "Row title length invalid. Should be at most 24 characters."
        return ""
    return "Unsupported interactive type."

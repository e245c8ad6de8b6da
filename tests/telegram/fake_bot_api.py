"""A fake Telegram Bot API server on 127.0.0.1, speaking the real HTTP protocol.

python-telegram-bot posts form-encoded parameters (JSON-encoded values for
objects, lists and numbers) to `/bot{token}/{method}` and expects
`{"ok": true, "result": ...}` or `{"ok": false, "error_code", "description",
"parameters"?}`. Implemented: getMe, getUpdates (long polling with offsets;
waiting polls wake on a new update and on shutdown), sendMessage,
editMessageText, deleteMessage, sendChatAction, setMyCommands,
deleteWebhook, setWebhook, getWebhookInfo, setMessageReaction (on a message
a person sent, one emoji of the published list; `fake.reaction(chat, msg)`),
editMessageReplyMarkup and
answerCallbackQuery (`push_callback` delivers a button press as a
`callback_query` update; `Sent.reply_markup` holds a message's inline
keyboard, from sendMessage or editMessageReplyMarkup), and sendDocument as a
multipart/form-data upload (the file lands in `fake.documents`); like the
real server (its nginx front), an upload over the bots' 50 MB limit is
answered 413 "Request Entity Too Large" as an HTML page, before any of the
body is read. Files a person sends, getFile, file downloads and sendPhoto
live in `fake.files` (tests/telegram/fake_files.py); `push_voice` delivers a
voice note or audio file stored there too; `sendVoice` takes a multipart
upload that must be OGG/Opus (checked by parsing it, tests/fakes/ogg_opus.py;
lands in `fake.voices`). Like Telegram, it rejects texts
over 4096 UTF-16 units, empty texts (also texts of only tabs, no-break
spaces, U+2028, zero-width or filler characters: Telegram strips them),
entities outside the text, splitting a surrogate pair or nesting against
Telegram's rules (`entity_rules`), and edits that change nothing ("message
is not modified").

Usage::

    async with FakeBotAPI(TOKEN) as fake:
        app = ApplicationBuilder().token(TOKEN).base_url(fake.base_url).build()
        fake.fail("sendMessage", Failure.flood(retry_after=1))
        fake.push_text(user_id=111, text="hello")
        call = await fake.wait_call("sendMessage")

`fake.calls` records every call (method, decoded params, monotonic time).

Faults of the kind a real Bot API shows: `fail` queues error answers
(`heal` forgets the rest); `stall(method)` makes the next call of a method
take effect (the message is stored and shown) while its answer is held back
until `release()` or shutdown, as when Telegram is slow to answer and the
client gives up first; `hold(method)` holds calls BEFORE they take effect
(nothing is stored; a client that goes away meanwhile has sent nothing).
`confirmed` lists the update ids a `getUpdates` offset confirmed, in order,
and `on_confirm(ids)` is called at that moment (before they are forgotten).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import time
import unicodedata
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.ogg_opus import NotOggOpus, read_ogg_opus
from tests.telegram.entity_rules import problem as entity_problem
from tests.telegram.fake_files import FakeFiles
from tests.waits import HANG_S

JSON_KEYS = frozenset(
    {
        "entities",
        "allowed_updates",
        "commands",
        "reply_parameters",
        "link_preview_options",
        "reply_markup",
        "scope",
        "reaction",
    }
)
INT_KEYS = frozenset({"offset", "limit", "timeout", "message_id", "max_connections"})
# ReactionTypeEmoji.emoji: the emoji a bot may react with (core.telegram.org/bots/api)
_PUBLISHED = (
    "👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢"
    " 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳"
    " ❤\u200d🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓"
    " 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨\u200d💻 👀 🎃 🙈"
    " 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿"
    " 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷\u200d♂ 🤷 🤷\u200d♀"
    " 😡"
)
REACTION_EMOJI = frozenset(_PUBLISHED.split())
BOT_ID = 4242
BOT_USERNAME = "roost_test_bot"
UPLOAD_LIMIT = 50 * 1024 * 1024  # "Bots can currently send files of any type of up to 50 MB"
DOWNLOAD_LIMIT = 20 * 1024 * 1024  # getFile: "files of up to 20MB in size"
TOO_LARGE = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n</body>\r\n</html>\r\n"
)


@dataclass(frozen=True)
class Failure:
    status: int
    description: str
    parameters: dict[str, Any] | None = None

    @classmethod
    def flood(cls, retry_after: int) -> Failure:
        return cls(
            429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
        )

    @classmethod
    def bad_gateway(cls) -> Failure:
        return cls(502, "Bad Gateway")

    @classmethod
    def server_error(cls) -> Failure:
        return cls(500, "Internal Server Error")

    @classmethod
    def unauthorized(cls) -> Failure:
        return cls(401, "Unauthorized")

    @classmethod
    def cant_parse(cls) -> Failure:
        return cls(400, "Bad Request: can't parse entities: Can't find end of the entity")


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float


@dataclass
class Sent:
    chat_id: int
    message_id: int
    text: str
    entities: list[dict[str, Any]] = field(default_factory=list)
    edits: int = 0
    deleted: bool = False
    reply_markup: dict[str, Any] | None = None  # an inline keyboard, as sent


@dataclass(frozen=True)
class Upload:
    """A file part of a multipart request, as it arrived."""

    filename: str
    content_type: str
    data: bytes


@dataclass
class Document:
    chat_id: int
    message_id: int
    upload: Upload
    caption: str = ""


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.description)
        self.failure = failure


class FakeBotAPI:
    def __init__(self, token: str, *, max_poll_s: float = 30.0, port: int = 0) -> None:
        self.token = token
        self.max_poll_s = max_poll_s
        self.calls: list[Call] = []
        self.peers: dict[str, set[object]] = defaultdict(set)  # client connections, by method
        self.updates: list[dict[str, Any]] = []
        self.pushed = 0  # updates queued so far (`Running.idle` waits until all are handled)
        self.messages: dict[tuple[int, int], Sent] = {}
        self.documents: list[Document] = []  # sendDocument uploads, in order
        self.voices: list[Document] = []  # sendVoice uploads, in order
        self.sent_count: dict[int, int] = defaultdict(int)  # sendMessage successes per chat
        self.commands: list[dict[str, Any]] = []
        self.webhook: dict[str, Any] = {}
        self.answered: list[str] = []  # callback query ids answered (answerCallbackQuery)
        self.said: set[tuple[int, int]] = set()  # (chat, message id) of people's messages
        # setMessageReaction: the bot's reaction on a person's message now ([]: none)
        self.reactions: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self._failures: dict[str, deque[Failure]] = defaultdict(deque)
        self._stalls: dict[str, int] = defaultdict(int)
        self._holds: set[str] = set()
        self._release = asyncio.Event()
        self.confirmed: list[int] = []
        self.on_confirm: Callable[[list[int]], None] = lambda ids: None
        # sendMessage/editMessageText of a text this returns a Failure for is refused
        self.refuse_text: Callable[[str], Failure | None] = lambda text: None
        self._next_update = 1
        self._next_message: dict[int, int] = defaultdict(lambda: 1000)
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._closing = False
        self._runner: web.AppRunner | None = None
        self._sites: list[web.TCPSite] = []
        self._handling = 0  # calls being handled now (see `quiet`)
        self.port = port  # 0: any free port
        self.app = web.Application(client_max_size=UPLOAD_LIMIT + 1024 * 1024)
        self.app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        self.files = FakeFiles(self)  # photos/documents in, getFile, downloads, sendPhoto
        self.app.router.add_get("/file/bot{token}/{path:.+}", self.files.download)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    async def __aenter__(self) -> FakeBotAPI:
        self._runner = web.AppRunner(self.app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        assert site._server is not None
        self._sites.append(site)
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._closing = True
        self._release.set()
        self._notify()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self._sites.clear()

    # -- scripting ---------------------------------------------------------------------------

    def fail(self, method: str, *failures: Failure) -> None:
        """The next calls of `method` fail with these, in order; a getUpdates long poll
        still open ends with the first of them now (Telegram ends an open long poll with
        409 when another one comes), not after its timeout."""
        self._failures[method].extend(failures)
        self._notify()

    def heal(self, method: str) -> None:
        """Forget the failures still queued for `method`."""
        self._failures.pop(method, None)

    def stall(self, method: str, count: int = 1) -> None:
        """The next `count` calls of `method` take effect, then their answers wait
        for `release()` (the client times out while the message is shown)."""
        self._stalls[method] += count

    def hold(self, method: str) -> None:
        """Calls of `method` wait for `release()` before they take effect."""
        self._holds.add(method)

    def release(self) -> None:
        """Let held and stalled calls go on (held ones take effect now)."""
        self._holds.clear()
        self._release.set()

    def push(self, update: dict[str, Any], update_id: int | None = None) -> int:
        """Queue an update (update_id assigned unless given: a redelivery); wakes polls."""
        update = {"update_id": self._next_update if update_id is None else update_id, **update}
        self.pushed += 1
        self._next_update = max(self._next_update, int(update["update_id"])) + 1
        self.updates.append(update)
        message = update.get("message")
        if isinstance(message, dict):  # a person's message: the bot may react to it
            self.said.add((int(message["chat"]["id"]), int(message["message_id"])))
        self._notify()
        return int(update["update_id"])

    def push_text(
        self,
        user_id: int,
        text: str,
        *,
        chat_id: int | None = None,
        chat_type: str = "private",
        message_id: int | None = None,
        kind: str = "message",
        entities: list[dict[str, Any]] | None = None,
        reply_to_bot: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> int:
        return self.push(
            {
                kind: self.message(
                    user_id,
                    text,
                    chat_id=chat_id,
                    chat_type=chat_type,
                    message_id=message_id,
                    entities=entities,
                    reply_to_bot=reply_to_bot,
                    extra=extra,
                )
            }
        )

    def message(
        self,
        user_id: int,
        text: str | None,
        *,
        chat_id: int | None = None,
        chat_type: str = "private",
        message_id: int | None = None,
        entities: list[dict[str, Any]] | None = None,
        reply_to_bot: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        chat_id = user_id if chat_id is None else chat_id
        chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = f"user{user_id}"
        else:
            chat["title"] = f"group {chat_id}"
        msg: dict[str, Any] = {
            "message_id": message_id if message_id is not None else self._next_update + 500,
            "date": int(time.time()),
            "chat": chat,
            "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"},
        }
        if text is not None:
            msg["text"] = text
            if entities is None and text.startswith("/"):
                word = text.split()[0]
                entities = [{"type": "bot_command", "offset": 0, "length": utf16_len(word)}]
            if entities:
                msg["entities"] = entities
        if reply_to_bot:
            msg["reply_to_message"] = {
                "message_id": 1,
                "date": int(time.time()),
                "chat": chat,
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
                "text": "earlier answer",
            }
        msg.update(extra or {})
        return msg

    def add_file(self, data: bytes, folder: str = "voice") -> str:
        """Store a file the way Telegram holds one; returns its file_id."""
        return self.files.add(data, folder, ".oga").file_id

    def push_voice(
        self,
        user_id: int,
        data: bytes,
        *,
        duration: int,
        kind: str = "voice",
        mime: str = "audio/ogg",
        file_size: int | None = None,
        caption: str | None = None,
        file_name: str | None = None,
        chat_id: int | None = None,
        chat_type: str = "private",
        reply_to_bot: bool = False,
    ) -> int:
        """A voice note (`kind="voice"`) or audio file (`"audio"`) with these bytes;
        `file_size` is what the message claims (default: the real size)."""
        file_id = self.add_file(data, "voice" if kind == "voice" else "music")
        media: dict[str, Any] = {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "duration": duration,
            "mime_type": mime,
            "file_size": len(data) if file_size is None else file_size,
        }
        if file_name is not None:
            media["file_name"] = file_name
        extra: dict[str, Any] = {kind: media}
        if caption is not None:
            extra["caption"] = caption
        msg = self.message(
            user_id, None, chat_id=chat_id, chat_type=chat_type, reply_to_bot=reply_to_bot
        )
        return self.push({"message": {**msg, **extra}})

    def push_callback(
        self,
        user_id: int,
        data: str,
        message_id: int,
        *,
        chat_id: int | None = None,
        chat_type: str = "private",
    ) -> int:
        """A press of an inline button under message `message_id` of the bot's."""
        chat_id = user_id if chat_id is None else chat_id
        sent = self.messages.get((chat_id, message_id))
        text = sent.text if sent is not None else "earlier answer"
        message = self.message(BOT_ID, text, chat_id=chat_id, chat_type=chat_type)
        message["message_id"] = message_id
        message["from"] = {"id": BOT_ID, "is_bot": True, "first_name": "roost"}
        query = {
            "id": str(9_000_000 + self._next_update),
            "from": {"id": user_id, "is_bot": False, "first_name": f"user{user_id}"},
            "message": message,
            "chat_instance": f"ci{chat_id}",
            "data": data,
        }
        return self.push({"callback_query": query})

    def keyboard(self, chat_id: int) -> list[tuple[str, str]]:
        """(label, callback data) of the buttons shown in a chat now, in order."""
        out = []
        for sent in self.sent_to(chat_id):
            rows = (sent.reply_markup or {}).get("inline_keyboard", [])
            out += [(b["text"], b["callback_data"]) for row in rows for b in row]
        return out

    # -- inspection --------------------------------------------------------------------------

    async def quiet(self) -> bool:
        """No call on its way in and none being handled. After a client is killed, what
        it wrote just before it died may still wait in the kernel: its call takes effect
        when the loop reads it, after the test's next steps. A test heals a failure, or
        counts what was sent, only once this holds (a long poll still open ends within
        `max_poll_s`). On its way in means any of: a connection waiting in the listen
        backlog; one the loop accepted whose protocol it has not made yet (asyncio makes
        it a few loop turns later, in a task); an open connection; a handler still
        running after its client went (aiohttp lets it finish)."""
        for _ in range(4):  # accept, the accepting task, connection_made: three turns
            if not self._idle():
                return False
            await asyncio.sleep(0)
        return self._idle()

    def _idle(self) -> bool:
        if self._handling:
            return False
        server = self._runner.server if self._runner is not None else None
        if server is not None and server.connections:
            return False
        listening = [sock for site in self._sites if site._server for sock in site._server.sockets]
        waiting, _, _ = select.select(listening, [], [], 0)
        return not waiting

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def sent_to(self, chat_id: int) -> list[Sent]:
        """Messages the bot shows in a chat now (deleted ones left out), in order."""
        rows = [m for (c, _), m in sorted(self.messages.items()) if c == chat_id]
        return [m for m in rows if not m.deleted]

    async def wait_until(self, predicate: Callable[[], bool], limit_s: float = HANG_S) -> None:
        """Wait for `predicate` (re-checked on every call); a hang guard, not a timing test."""

        if predicate():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((predicate, future))
        await asyncio.wait_for(future, limit_s)

    async def wait_call(self, method: str, count: int = 1, limit_s: float = HANG_S) -> Call:
        await self.wait_until(lambda: len(self.calls_of(method)) >= count, limit_s)
        return self.calls_of(method)[count - 1]

    def _notify(self) -> None:
        """Wake the waiters whose predicate now holds (checked here, not in each waiter)."""
        waiting = []
        for predicate, future in self._waiters:
            if future.done():
                continue
            if predicate():
                future.set_result(None)
            else:
                waiting.append((predicate, future))
        self._waiters = waiting

    # -- the protocol ------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.Response:
        self._handling += 1
        try:
            return await self._handle(request)
        finally:
            self._handling -= 1

    async def _handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _error(Failure(401, "Unauthorized"))
        method = request.match_info["method"]
        if (request.content_length or 0) > UPLOAD_LIMIT:
            return web.Response(status=413, text=TOO_LARGE, content_type="text/html")
        params = await _params(request)
        self.calls.append(Call(method, params, time.monotonic()))
        if request.transport is not None:
            self.peers[method].add(request.transport.get_extra_info("peername"))
        self._notify()
        queued = self._failures.get(method)
        if queued:
            return _error(queued.popleft())
        if method in self._holds:
            await self._release.wait()
            if request.transport is None or request.transport.is_closing():
                return web.Response(status=499)  # the client went away: nothing happened
        handler = getattr(self, f"_m_{method}", None) or self.files.handler(method)
        if handler is None:
            return _error(Failure(404, "Not Found: method not found"))
        try:
            result = await handler(params)
        except ApiError as exc:
            return _error(exc.failure)
        self._notify()
        if self._stalls.get(method):
            self._stalls[method] -= 1
            await self._release.wait()  # shown already; the answer comes too late
        return web.json_response({"ok": True, "result": result})

    async def _m_getMe(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": BOT_ID,
            "is_bot": True,
            "first_name": "roost",
            "username": BOT_USERNAME,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _m_getUpdates(self, p: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(p.get("offset") or 0)
        limit = int(p.get("limit") or 100)
        timeout = min(float(p.get("timeout") or 0), self.max_poll_s)
        if offset:
            gone = [int(u["update_id"]) for u in self.updates if u["update_id"] < offset]
            if gone:
                self.on_confirm(gone)
                self.confirmed += gone
            self.updates = [u for u in self.updates if u["update_id"] >= offset]

        def ready() -> bool:
            return bool(self.updates) or self._closing or bool(self._failures.get("getUpdates"))

        if not ready() and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await self.wait_until(ready, timeout)
        if self._closing:
            return []
        queued = self._failures.get("getUpdates")
        if queued:  # scripted while this poll was open
            raise ApiError(queued.popleft())
        return self.updates[:limit]

    async def _m_sendMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id = int(p["chat_id"])
        text, entities = self._checked(p)
        self._next_message[chat_id] += 1
        message_id = self._next_message[chat_id]
        self.messages[(chat_id, message_id)] = Sent(
            chat_id, message_id, text, entities, reply_markup=p.get("reply_markup")
        )
        self.sent_count[chat_id] += 1
        return self._message_json(self.messages[(chat_id, message_id)])

    async def _m_editMessageText(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id, message_id = int(p["chat_id"]), int(p["message_id"])
        sent = self.messages.get((chat_id, message_id))
        if sent is None or sent.deleted:
            raise ApiError(Failure(400, "Bad Request: message to edit not found"))
        text, entities = self._checked(p)
        markup = p.get("reply_markup")
        if text == sent.text and entities == sent.entities and markup == sent.reply_markup:
            raise ApiError(
                Failure(
                    400,
                    "Bad Request: message is not modified: specified new message content and "
                    "reply markup are exactly the same as a current content and reply markup "
                    "of the message",
                )
            )
        sent.text, sent.entities = text, entities
        sent.reply_markup = markup  # like Telegram: an edit without one drops it
        sent.edits += 1
        return self._message_json(sent)

    async def _m_editMessageReplyMarkup(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id, message_id = int(p["chat_id"]), int(p["message_id"])
        sent = self.messages.get((chat_id, message_id))
        if sent is None or sent.deleted:
            raise ApiError(Failure(400, "Bad Request: message to edit not found"))
        markup = p.get("reply_markup")
        for row in (markup or {}).get("inline_keyboard", []):
            for button in row:
                if len(str(button.get("callback_data", "")).encode()) > 64:
                    raise ApiError(Failure(400, "Bad Request: BUTTON_DATA_INVALID"))
        if markup == sent.reply_markup:
            raise ApiError(Failure(400, "Bad Request: message is not modified"))
        sent.reply_markup = markup
        return self._message_json(sent)

    async def _m_answerCallbackQuery(self, p: dict[str, Any]) -> bool:
        self.answered.append(str(p["callback_query_id"]))
        return True

    async def _m_setMessageReaction(self, p: dict[str, Any]) -> bool:
        """The bot's reactions on a message: at most one (bots are not premium), an
        emoji of the published list; an empty or missing list removes them."""
        key = (int(p["chat_id"]), int(p["message_id"]))
        if key not in self.said:
            raise ApiError(Failure(400, "Bad Request: MESSAGE_ID_INVALID"))
        reaction = list(p.get("reaction") or [])
        if len(reaction) > 1:
            raise ApiError(Failure(400, "Bad Request: REACTIONS_TOO_MANY"))
        for kind in reaction:
            if kind.get("type") != "emoji" or kind.get("emoji") not in REACTION_EMOJI:
                raise ApiError(Failure(400, "Bad Request: REACTION_INVALID"))
        self.reactions[key] = reaction
        return True

    def reaction(self, chat_id: int, message_id: int) -> list[str]:
        """The emoji the bot shows on a person's message now."""
        return [r["emoji"] for r in self.reactions.get((chat_id, message_id), [])]

    async def _m_deleteMessage(self, p: dict[str, Any]) -> bool:
        sent = self.messages.get((int(p["chat_id"]), int(p["message_id"])))
        if sent is None or sent.deleted:
            raise ApiError(Failure(400, "Bad Request: message to delete not found"))
        sent.deleted = True
        return True

    async def _m_sendDocument(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id = int(p["chat_id"])
        upload = p.get("document")
        if not isinstance(upload, Upload):  # a file_id or URL: not what roost sends
            raise ApiError(Failure(400, "Bad Request: wrong file identifier/HTTP URL specified"))
        if not upload.data:
            raise ApiError(Failure(400, "Bad Request: file must be non-empty"))
        self._next_message[chat_id] += 1
        message_id = self._next_message[chat_id]
        self.documents.append(Document(chat_id, message_id, upload, str(p.get("caption", ""))))
        chat_type = "private" if chat_id > 0 else "supergroup"
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": chat_type},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
            "document": {
                "file_id": f"doc-{message_id}",
                "file_unique_id": f"u-{message_id}",
                "file_name": upload.filename,
                "mime_type": upload.content_type,
                "file_size": len(upload.data),
            },
        }

    async def _m_sendVoice(self, p: dict[str, Any]) -> dict[str, Any]:
        chat_id = int(p["chat_id"])
        upload = p.get("voice")
        if not isinstance(upload, Upload) or not upload.data:
            raise ApiError(Failure(400, "Bad Request: file must be non-empty"))
        try:
            info = read_ogg_opus(upload.data)
        except (NotOggOpus, UnicodeDecodeError, ValueError):
            raise ApiError(Failure(400, "Bad Request: voice must be OGG/Opus")) from None
        self._next_message[chat_id] += 1
        message_id = self._next_message[chat_id]
        self.voices.append(Document(chat_id, message_id, upload, str(p.get("caption", ""))))
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
            "voice": {
                "file_id": f"voice-{message_id}",
                "file_unique_id": f"uv-{message_id}",
                "duration": round(info.duration_s),
                "mime_type": "audio/ogg",
                "file_size": len(upload.data),
            },
        }

    def voices_to(self, chat_id: int) -> list[Document]:
        return [v for v in self.voices if v.chat_id == chat_id]

    def next_message_id(self, chat_id: int) -> int:
        self._next_message[chat_id] += 1
        return self._next_message[chat_id]

    def documents_to(self, chat_id: int) -> list[Document]:
        return [d for d in self.documents if d.chat_id == chat_id]

    async def _m_sendChatAction(self, p: dict[str, Any]) -> bool:
        return True

    async def _m_setMyCommands(self, p: dict[str, Any]) -> bool:
        self.commands = list(p.get("commands") or [])
        return True

    async def _m_deleteWebhook(self, p: dict[str, Any]) -> bool:
        self.webhook = {}
        return True

    async def _m_setWebhook(self, p: dict[str, Any]) -> bool:
        self.webhook = dict(p)
        return True

    async def _m_getWebhookInfo(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": self.webhook.get("url", ""),
            "has_custom_certificate": False,
            "pending_update_count": 0,
        }

    def _checked(self, p: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
        failure = self.refuse_text(str(p.get("text", "")))
        if failure is not None:
            raise ApiError(failure)
        return _checked_text(p)

    def _message_json(self, sent: Sent) -> dict[str, Any]:
        chat_type = "private" if sent.chat_id > 0 else "supergroup"
        out: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": int(time.time()),
            "chat": {"id": sent.chat_id, "type": chat_type},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
            "text": sent.text,
        }
        if sent.edits:
            out["edit_date"] = int(time.time())
        if sent.entities:
            out["entities"] = sent.entities
        if sent.reply_markup:
            out["reply_markup"] = sent.reply_markup
        return out


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        raw: dict[str, Any] = await request.json()
        return raw
    form = await request.post()  # urlencoded, or multipart/form-data with file parts
    out: dict[str, Any] = {}
    for key, value in form.items():
        if isinstance(value, web.FileField):
            data = value.file.read()
            out[key] = Upload(value.filename, value.content_type, data)
            continue
        text = value if isinstance(value, str) else str(value)
        if key in JSON_KEYS:
            out[key] = json.loads(text)
        elif key in INT_KEYS:
            out[key] = int(text)
        else:
            out[key] = text
    return out


def _checked_text(p: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    text = str(p.get("text", ""))
    entities = list(p.get("entities") or [])
    if not telegram_strip(text):
        raise ApiError(Failure(400, "Bad Request: message text is empty"))
    units = utf16_len(text)
    if units > 4096:
        raise ApiError(Failure(400, "Bad Request: message is too long"))
    why = entity_problem(text, entities)  # bounds, code points, nesting (entity_rules)
    if why is not None:
        raise ApiError(Failure(400, f"Bad Request: can't parse entities: {why}"))
    return text, entities


# Telegram trims Unicode white space and invisible fillers from a message's
# edges (and counts a text of nothing else as empty): format controls (Cf: ZWSP,
# ZWJ, word joiner, BOM, bidi marks), separators, controls, and the Hangul and
# Braille fillers that render blank.
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")


def _blank(ch: str) -> bool:
    return (
        ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in ("Cf", "Cc", "Zs", "Zl", "Zp")
    )


def telegram_strip(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _blank(text[start]):
        start += 1
    while end > start and _blank(text[end - 1]):
        end -= 1
    return text[start:end]


def _error(failure: Failure) -> web.Response:
    body: dict[str, Any] = {
        "ok": False,
        "error_code": failure.status,
        "description": failure.description,
    }
    if failure.parameters:
        body["parameters"] = failure.parameters
    return web.json_response(body, status=failure.status)

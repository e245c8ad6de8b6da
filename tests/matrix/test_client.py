"""Retries and reconnection, against a loopback server answering as a homeserver does.

Synapse does not throttle or fail on demand, so these use a small aiohttp
server speaking the client-server API's error format (`{"errcode",
"error", "retry_after_ms"}`, spec "Rate limiting"): 429 is retried after at
least the asked wait, 5xx and a dropped connection with backoff, with the
same transaction id (the homeserver sends a retried event once); 403 is
final. The sync loop survives a homeserver that is gone for a while; a
restarted bot is connected at once, never after a quiet account's long-poll. An
mxc:// URI outside the spec's grammar is refused before any request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from bridge.channels.common.retry import Backoff
from bridge.channels.matrix.api import MatrixClient, MatrixError
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.events import Message
from bridge.channels.matrix.inbox import MatrixInbox
from bridge.channels.matrix.store import MatrixStore
from bridge.types.messages import Final, Inbound, Reply
from tests.schedule.database import database_of
from tests.waits import until

WAIT_S = 60.0


class Homeserver:
    """Answers each request with the next scripted (status, body); then 200."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any]]] = []
        self.txns: list[str] = []
        self.syncs = 0
        self.sync_timeouts: list[str] = []  # each sync's `timeout` (ms), as asked
        self.quiet = asyncio.Event()  # set: a long-poll ends (nothing new was said)
        self.other: list[str] = []  # any other request's raw path
        self.rooms = False  # True: answer a room's members and state (a private room of two)
        app = web.Application()
        app.router.add_put("/_matrix/client/v3/rooms/{room}/send/{kind}/{txn}", self._send)
        app.router.add_get("/_matrix/client/v3/sync", self._sync)
        app.router.add_route("*", "/{tail:.*}", self._other)
        self.runner = web.AppRunner(app, access_log=None)
        self.url = ""

    async def __aenter__(self) -> Homeserver:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.quiet.set()
        await self.runner.cleanup()

    def _next(self) -> web.Response | None:
        if self.script:
            status, body = self.script.pop(0)
            return web.json_response(body, status=status)
        return None

    async def _send(self, request: web.Request) -> web.Response:
        self.txns.append(request.match_info["txn"])
        return self._next() or web.json_response({"event_id": "$sent"})

    async def _other(self, request: web.Request) -> web.Response:
        self.other.append(request.raw_path)
        if "/rooms/" in request.path and self.rooms:  # a direct room of two, private
            if self.script:  # the homeserver is down while failures are scripted
                return web.json_response({"errcode": "M_UNKNOWN", "error": "down"}, status=502)
            if request.path.endswith("/members"):
                joined = {"content": {"membership": "join"}}
                return web.json_response({"chunk": [joined, joined]})
            return web.json_response({"errcode": "M_NOT_FOUND", "error": "-"}, status=404)
        return web.Response(body=b"file bytes")

    async def _sync(self, request: web.Request) -> web.Response:
        self.syncs += 1
        self.sync_timeouts.append(request.query.get("timeout", ""))
        scripted = self._next()
        if scripted is not None:
            return scripted
        if request.query.get("timeout", "0") != "0":
            await self.quiet.wait()  # a quiet account: the long-poll runs its course
        return web.json_response({"next_batch": f"s{self.syncs}", "rooms": {}})


@pytest.fixture
async def hs() -> AsyncIterator[Homeserver]:
    async with Homeserver() as server:
        yield server


async def test_429_waits_at_least_what_the_server_asks_then_succeeds(hs: Homeserver) -> None:
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    hs.script = [
        (429, {"errcode": "M_LIMIT_EXCEEDED", "error": "Too many", "retry_after_ms": 2500}),
        (502, {"errcode": "M_UNKNOWN", "error": "Bad gateway"}),
    ]
    client = MatrixClient(hs.url, "tok", backoff=Backoff(0.1, 1.0, 4), sleep=sleep)
    try:
        assert await client.send("!r:hs", {"msgtype": "m.text", "body": "hi"}, "t1") == "$sent"
    finally:
        await client.aclose()
    assert waits == [2.5, 0.2]  # the server's 2.5 s, then the policy's second step
    assert hs.txns == ["t1", "t1", "t1"]  # one transaction: the homeserver sends it once


async def test_a_refusal_is_final_and_keeps_no_server_text(hs: Homeserver) -> None:
    hs.script = [(403, {"errcode": "M_FORBIDDEN", "error": "You are not in room !r:hs"})]
    client = MatrixClient(hs.url, "tok", backoff=Backoff(0.001, 0.01, 4))
    try:
        with pytest.raises(MatrixError) as caught:
            await client.send("!r:hs", {"msgtype": "m.text", "body": "hi"}, "t2")
    finally:
        await client.aclose()
    assert (caught.value.status, caught.value.errcode) == (403, "M_FORBIDDEN")
    assert "not in room" not in str(caught.value) and hs.txns == ["t2"]


async def test_an_mxc_uri_outside_the_grammar_is_refused_unasked(hs: Homeserver) -> None:
    client = MatrixClient(hs.url, "tok", backoff=Backoff(0.001, 0.01, 2))
    bad = [
        "mxc://hs/../../v3/rooms",
        "mxc://hs/media.id",
        "mxc://hs/media%2F..",
        "mxc://hs/media?x=1",
        "mxc://hs/a b",
        "mxc://h s/media",
        "mxc://user@hs/media",
        "mxc://hs:port/media",
        "mxc://../media",
        "mxc://hs/",
        "mxc:///media",
    ]
    try:
        for uri in bad:
            with pytest.raises(MatrixError) as caught:
                await client.download(uri, 1024)
            assert caught.value.errcode == "M_BAD_MXC", uri
        assert hs.other == []
        for uri in ("mxc://hs.example:8448/AbC_-09", "mxc://[::1]/x", "mxc://10.0.0.1/y"):
            assert await client.download(uri, 1024) == b"file bytes"
    finally:
        await client.aclose()
    assert hs.other[0] == "/_matrix/client/v1/media/download/hs.example:8448/AbC_-09"
    assert len(hs.other) == 3


async def never(inbound: Inbound, reply: Reply) -> Final:
    raise AssertionError("nothing to answer")


async def test_the_sync_loop_outlasts_a_failing_homeserver_and_keeps_its_token(
    hs: Homeserver, tmp_path: Any
) -> None:
    hs.script = [
        (502, {"errcode": "M_UNKNOWN", "error": "down"}),
        (503, {"errcode": "M_UNKNOWN", "error": "down"}),
        (429, {"errcode": "M_LIMIT_EXCEEDED", "error": "slow", "retry_after_ms": 1}),
    ]
    async with database_of(tmp_path / "roost.db") as db:
        store = MatrixStore(db, "@bot:hs")
        client = MatrixClient(hs.url, "tok")
        quick = Backoff(first_s=0.001, max_s=0.01, attempts=1 << 30)
        channel = MatrixChannel(client, store, never, "@bot:hs", reconnect=quick, poll_ms=10)
        await channel.start()
        try:
            await asyncio.wait_for(channel.synced.wait(), WAIT_S)
            assert channel.connected and hs.syncs == 4
        finally:
            await channel.stop()
        assert await store.next_batch() == "s4"


async def test_a_restarted_bot_is_connected_at_once_not_after_a_quiet_long_poll(
    hs: Homeserver, tmp_path: Any
) -> None:
    """With a stored token, the run's first sync asks for what is pending at once (timeout
    0): a quiet account's 30 s long-poll would keep a restarted bot "connecting" and
    unsynced for that long. Then it long-polls as usual."""
    async with database_of(tmp_path / "roost.db") as db:
        store = MatrixStore(db, "@bot:hs")
        await store.save_batch("s-before-the-restart", 0)
        channel = MatrixChannel(MatrixClient(hs.url, "tok"), store, never, "@bot:hs")
        await channel.start()
        try:
            await until(lambda: hs.sync_timeouts, "the first sync")
            assert hs.sync_timeouts[0] == "0"  # not a long-poll the bot would wait out
            await asyncio.wait_for(channel.synced.wait(), WAIT_S)
            assert channel.status_line() == "matrix @bot:hs (connected)"
            await until(lambda: len(hs.sync_timeouts) == 2, "the long-poll after it")
            assert hs.sync_timeouts == ["0", "30000"]
        finally:
            await channel.stop()
        assert await store.next_batch() == "s1"


async def test_what_a_killed_run_left_is_answered_once_the_homeserver_is_back(
    hs: Homeserver, tmp_path: Any
) -> None:
    """A message the previous run took and never answered waits in the inbox; this run
    starts while the homeserver is down (the room cannot be checked): the message is
    answered once it is back, not dropped as a room that cannot be checked."""
    hs.rooms = True
    hs.script = [(502, {"errcode": "M_UNKNOWN", "error": "down"})] * 2
    said = Message("!dm:hs", "@alice:hs", "$e1", "m.text", "are you there?")
    answered: list[str] = []

    async def answer(inbound: Inbound, reply: Reply) -> Final:
        answered.append(inbound.text)
        return Final("yes")

    async with database_of(tmp_path / "roost.db") as db:
        store = MatrixStore(db, "@bot:hs")
        await MatrixInbox(db, "@bot:hs", "killed").take([("@alice:hs", said)], "s0")
        inbox = MatrixInbox(db, "@bot:hs", "restarted")
        quick = Backoff(first_s=0.001, max_s=0.01, attempts=1 << 30)
        client = MatrixClient(hs.url, "tok", backoff=Backoff(0.001, 0.01, 1))
        channel = MatrixChannel(
            client, store, answer, "@bot:hs", reconnect=quick, poll_ms=10, inbox=inbox
        )
        await channel.start()
        try:
            await asyncio.wait_for(channel.synced.wait(), WAIT_S)
            await channel.idle()
        finally:
            await channel.stop()
        assert answered == ["are you there?"]
        assert await inbox.open_count() == 0

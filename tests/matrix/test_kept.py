"""What a run left unanswered (the durable inbox, `inbox.py`), answered by the next start.

The first run takes Alice's message and is stopped while its answer hangs (the
stop cuts it off, as a kill would): the row stays open. The next start answers
it even when the homeserver is still away when roost starts (both restarted at
once): the kept message's room is checked only once a sync answered, not
failed closed (dropped) at once. A prune of old rows that fails at the start
costs nothing of what was kept. A message that MAX_TRIES runs began and none
finished (one whose handling kills roost) is given up, not taken by every start;
the messages queued behind it, never begun, are answered after it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.channels.matrix.inbox import MAX_TRIES, MatrixInbox
from bridge.storage.errors import StorageError
from bridge.types.backend import ModelEvent, ModelRequest, TextDelta
from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import WAIT_S, Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot
from tests.waits import until


class Hanging(ScriptedBackend):
    """A model that never answers (`asked` is set once a request arrived)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        self.asked.set()
        await asyncio.Event().wait()
        yield TextDelta("never")


class Gate:
    """A TCP front for the homeserver: away (each request's connection closed once its
    first line is read) until the first `/sync` was refused, then forwarding."""

    def __init__(self, port: int) -> None:
        self.port, self.down, self.refused = port, True, 0
        self._pipes: set[asyncio.Task[None]] = set()

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await reader.readline()
        if self.down:
            self.refused += 1
            self.down = b"/sync" not in first  # back once roost has tried to sync
            writer.close()
            return
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.port)
        up_w.write(first)
        for task in (_pipe(reader, up_w), _pipe(up_r, writer)):
            self._pipes.add(asyncio.create_task(task))

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[int]:
        server = await asyncio.start_server(self._conn, "127.0.0.1", 0)
        try:
            yield int(server.sockets[0].getsockname()[1])
        finally:
            server.close()
            for task in self._pipes:
                task.cancel()
            await asyncio.gather(*self._pipes, return_exceptions=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def left_open(home: Path, synapse: Synapse, accounts: Accounts, alice: Person) -> str:
    """A run that took Alice's message and was stopped before it answered."""
    hanging = Hanging()
    async with running(mx_settings(home, synapse, accounts), hanging) as r:
        room = await alice.create_room([accounts.bot.user_id])
        await alice.wait(lambda: alice.membership(room, accounts.bot.user_id) == "join")
        await alice.say(room, "are you there?")
        await asyncio.wait_for(hanging.asked.wait(), WAIT_S)  # taken, its row stored
        r.channel.stop_grace_s = 0.0  # the stop cuts the answer off, as a kill would
    return room


async def test_a_kept_message_is_answered_when_the_homeserver_was_away_at_the_start(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    room = await left_open(home, synapse, accounts, alice)
    gate = Gate(synapse.port)
    second = ScriptedBackend("yes, here now", "again?!")
    async with gate.serving() as port:
        away = mx_settings(
            home, synapse, accounts, matrix={"homeserver": f"http://127.0.0.1:{port}"}
        )
        async with running(away, second) as r:
            await alice.wait(lambda: alice.texts(room, bot) == ["yes, here now"], "answered")
            await r.channel.idle()
            assert r.channel.inbox is not None
            assert await r.channel.inbox.open_count() == 0
            assert r.channel.ignored["room unknown"] == 0
    assert gate.refused >= 1 and len(second.requests) == 1


async def test_a_prune_that_fails_at_the_start_keeps_nothing_from_being_answered(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = accounts.bot.user_id
    room = await left_open(home, synapse, accounts, alice)

    async def away(self: MatrixInbox) -> int:
        raise StorageError("database is locked")

    monkeypatch.setattr(MatrixInbox, "prune", away)
    second = ScriptedBackend("yes, here now", "again?!")
    async with running(mx_settings(home, synapse, accounts), second) as r:
        await alice.wait(lambda: alice.texts(room, bot) == ["yes, here now"], "answered")
        await r.channel.idle()
    assert len(second.requests) == 1


async def test_a_message_no_run_finished_is_given_up_after_max_tries(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    settings = mx_settings(home, synapse, accounts)
    await left_open(home, synapse, accounts, alice)  # the first run that took it
    for _ in range(MAX_TRIES - 1):  # each next start takes it again, and is cut off too
        hanging = Hanging()
        async with running(settings, hanging) as r:
            await asyncio.wait_for(hanging.asked.wait(), WAIT_S)
            r.channel.stop_grace_s = 0.0
    last = ScriptedBackend("never", "again?!")
    async with running(settings, last) as r:  # recovered before its first sync was stored
        await r.channel.idle()
        assert r.channel.inbox is not None
        assert await r.channel.inbox.open_count() == 0
    assert last.requests == []


async def test_a_message_behind_one_no_run_finished_is_answered_once_that_one_is_given_up(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    """Only the runs that BEGAN a message count: the one queued behind a message that
    kills every run was never begun, and is answered once that one is given up (it was
    dropped with it, unanswered, when every run that took it counted)."""
    bot = accounts.bot.user_id
    settings = mx_settings(home, synapse, accounts)
    hanging = Hanging()
    async with running(settings, hanging) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "the first")
        await asyncio.wait_for(hanging.asked.wait(), WAIT_S)
        await alice.say(room, "the second")
        assert r.channel.inbox is not None
        inbox = r.channel.inbox
        await until(lambda: _open_is(inbox, 2), "the second taken, behind the first")
        r.channel.stop_grace_s = 0.0
    for _ in range(MAX_TRIES - 1):  # each next start begins the first again, cut off too
        hanging = Hanging()
        async with running(settings, hanging) as r:
            await asyncio.wait_for(hanging.asked.wait(), WAIT_S)
            r.channel.stop_grace_s = 0.0
        assert all("the first" in str(q.messages[-1].content) for q in hanging.requests)
    last = ScriptedBackend("the answer to the second", "again?!")
    async with running(settings, last) as r:
        await alice.wait(
            lambda: alice.texts(room, bot)[-1:] == ["the answer to the second"], "answered"
        )
        await r.channel.idle()
    assert len(last.requests) == 1
    assert "the second" in str(last.requests[0].messages[-1].content)


async def _open_is(inbox: MatrixInbox, count: int) -> bool:
    return await inbox.open_count() == count


async def test_a_message_not_answered_before_a_stop_is_answered_after_the_restart(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    settings = mx_settings(home, synapse, accounts)
    hanging = Hanging()
    async with running(settings, hanging) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "are you there?")
        await asyncio.wait_for(hanging.asked.wait(), WAIT_S)  # taken, its token stored
        r.channel.stop_grace_s = 0.0  # the stop cuts the answer off, as a kill would
    second = ScriptedBackend("yes, here now", "again?!")
    async with running(settings, second) as r:
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == ["yes, here now"], "answered")
        await r.channel.idle()
        still_open = await r.channel.inbox.open_count() if r.channel.inbox else -1
    assert len(second.requests) == 1
    assert "are you there?" in str(second.requests[0].messages[-1].content)
    assert still_open == 0

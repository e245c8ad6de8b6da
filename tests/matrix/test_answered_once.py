"""A message whose answer went out before its done mark is not answered twice (real Synapse).

The first run answers Alice, and its done mark never lands (`MatrixInbox.done`
raises: the process died between the answer going out and the mark), so the
row is open at the next start. The session already holds the turn: the next
start sends that stored answer again with the answer's own transaction ids
(`send.answer_txn`), so Synapse gives back the event it has, and Alice sees
one answer; the model is not asked again and the turn is stored once. (Before:
a second model turn, stored too, and a second answer in the room.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.channels.matrix.inbox import MatrixInbox
from bridge.storage.errors import StorageError
from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot


async def test_an_answer_out_before_its_mark_is_not_answered_again(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = accounts.bot.user_id
    settings = mx_settings(home, synapse, accounts)

    async def never(self: MatrixInbox, update_id: int, *, dropped: bool = False) -> None:
        raise StorageError("the process died before the mark")

    first = ScriptedBackend("first answer")
    with monkeypatch.context() as patched:
        patched.setattr(MatrixInbox, "done", never)
        async with running(settings, first) as r:
            room = await dm_with_bot(alice, bot)
            await alice.say(room, "are you there?")
            await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "answered")
            await r.channel.idle()
            assert r.channel.inbox is not None and await r.channel.inbox.open_count() == 1

    second = ScriptedBackend("answered twice")
    async with running(settings, second) as r:
        await r.channel.idle()  # the kept message handled
        assert r.channel.inbox is not None and await r.channel.inbox.open_count() == 0
        turns = await r.roost.database.fetch_value(
            "SELECT COUNT(*) FROM session_messages WHERE role = 'user' AND channel = 'matrix'"
        )
        await alice.say(room, "and now?")  # a later message: what the room shows is synced
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == ["answered twice"], "answered")
    assert second.requests[0].messages[-1].content == "and now?"  # not asked again before it
    assert int(turns) == 1  # the turn stored once
    assert alice.texts(room, bot) == ["first answer", "answered twice"]  # one answer each

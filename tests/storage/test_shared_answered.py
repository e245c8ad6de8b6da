"""Instances sharing a bot: a dead instance's update whose turn was stored is not asked again.

An instance took update 1 under the chat's lease, its turn ended (the
session holds the exchange) and it died before the done mark. The instance
that takes the chat once the lease expired finds the stored turn
(`InboxMarks.stored_answer`): the stored answer goes to the outbox (`resend`)
and the update is marked done; the model's `answer` is not called for it
(before: it was, a second turn), and the chat's next update is answered as
usual, after it. On both backends.
"""

from __future__ import annotations

from bridge.channels.common.chat_queue import ChatQueue, Taken, lease_name
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.channels.telegram.shared import SharedWork
from bridge.storage.leases import Leases
from bridge.storage.protocol import Database
from tests.storage.test_chat_queue import SOURCE, Recorder, _done, state_of, until
from tests.storage.test_inbox_answered import session_rows
from tests.storage.test_inbox_store import message
from tests.waits import HANG_S


async def test_a_dead_instances_stored_turn_is_resent_not_answered_again(db: Database) -> None:
    dead = UpdateInbox(db, SOURCE, "dead")
    await dead.store([message(1, 111, "q1"), message(2, 111, "q2")], taken=False)
    assert await Leases(db).acquire(lease_name(SOURCE, "111"), "dead", 400) is not None
    assert await ChatQueue(db, SOURCE).claim("111", "dead") is not None
    await session_rows(db, "telegram", "111", "501", ["user", "assistant"])  # then killed
    resent: list[tuple[int, str]] = []

    async def resend(taken: Taken, text: str) -> bool:
        resent.append((taken.update_id, text))
        return True

    async def give_up(taken: Taken) -> None:
        raise AssertionError("nothing is given up")

    rec = Recorder()
    inbox = UpdateInbox(db, SOURCE, "alive")
    answer = rec.answer_for("alive", inbox)
    work = SharedWork(inbox, Leases(db), 400, answer, give_up, resend=resend)
    work.start()
    await until(lambda: _done(rec, 1))
    assert resent == [(1, "assistant 1")]
    assert rec.by == [("alive", 2)]  # was [("alive", 1), ("alive", 2)]: asked again
    assert await state_of(db, 1) == ("done", 2)
    await work.stop(HANG_S)

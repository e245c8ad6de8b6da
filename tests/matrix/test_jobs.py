"""A scheduled turn in a Matrix chat runs as its person and arrives in their room.

A Matrix chat is the person's user id, which holds a ":" (`@alice:localhost`);
the job runner must take the person from the platform's declaration
(`identity_of_chat`), not read the chat as Telegram's "<group>:<user>",
or the job would run as nobody and be skipped.
"""

from __future__ import annotations

import time
from pathlib import Path

from bridge.app.schedule_loop import ScheduleLoop
from bridge.schedule.jobs import Job
from bridge.schedule.runtime import job_inbound
from tests.conftest import ScriptedBackend
from tests.masking import m
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot


async def test_a_turn_job_in_a_matrix_chat_is_answered_in_the_room(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    backend = ScriptedBackend("hello", "Your morning brief.")
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hi")  # the room becomes alice's direct room
        await alice.wait(lambda: alice.texts(room, bot) == ["hello"], "the answer")
        loop = ScheduleLoop(r.roost)
        loop.deliveries.add("matrix", r.outbox)
        now_ms = int(time.time() * 1000)
        job = await r.roost.schedule.jobs.create(
            tenant="alice", channel="matrix", chat=who, kind="turn", spec="",
            payload=m("brief me"), tz="UTC", next_run_ms=now_ms, created_ms=now_ms - 1000,
        )  # fmt: skip
        loop.start()
        try:
            r.roost.schedule.changed()
            await alice.wait(lambda: len(alice.texts(room, bot)) == 2, "the job's answer")
        finally:
            await loop.stop()
    assert alice.texts(room, bot)[1] == f"🔁 brief me (job {job.id})\nYour morning brief."
    assert "brief me" in str(backend.requests[-1].messages[-1].content)


def test_without_a_declaration_a_colon_chat_is_still_a_telegram_group() -> None:
    job = Job("t", "j", "telegram", "-100123:456", "turn", "", "x", "UTC", "active",
              None, 0, None, 0, 0, "")  # fmt: skip
    inbound = job_inbound(job, 1)
    assert (inbound.identity, inbound.is_private) == ("456", False)
    declared = job_inbound(job, 1, lambda channel, chat: "@alice:localhost")
    assert (declared.identity, declared.is_private) == ("@alice:localhost", False)

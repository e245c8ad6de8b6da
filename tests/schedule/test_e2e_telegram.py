"""The scheduler inside a roost, end to end against the fake Bot API.

An in-process roost (scripted model, memory audit, the real sandbox) with the
real Telegram channel and the real `ScheduleLoop`; jobs are made directly in
the job store. Tests that need hours to pass drive a manual clock (its sleep
returns when the test moves time on); the others use the wall clock. Every
wait is bounded (a hang guard), none is a timing assertion.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.app.build import Roost, build
from bridge.app.schedule_loop import ScheduleLoop, wall_ms
from bridge.app.serve import undelivered_hook
from bridge.channels.telegram.channel import TelegramChannel
from bridge.schedule.jobs import Job
from bridge.schedule.outbox import OutboxPolicy
from bridge.schedule.scheduler import SchedulerConfig
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import ScriptedBackend
from tests.masking import m
from tests.telegram.conftest import ALICE, NO_DRAFTS, fake, tg_settings
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import HANG_S, until

__all__ = ["fake"]  # the fake Bot API fixture, shared with tests/telegram
HOUR = 3_600_000
T0 = 1_800_000_000_000 - (1_800_000_000_000 % HOUR)  # on an hour


class ManualTime:
    """A clock the test moves; a sleep returns once the clock has passed its end."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._sleepers: list[tuple[int, asyncio.Future[None]]] = []

    def clock(self) -> int:
        return self.now_ms

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now_ms + int(seconds * 1000), future))
        await future

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        waiting = []
        for end, future in self._sleepers:
            if future.done():
                continue
            if end <= self.now_ms:
                future.set_result(None)
            else:
                waiting.append((end, future))
        self._sleepers = waiting


@dataclass
class Live:
    roost: Roost
    channel: TelegramChannel
    loop: ScheduleLoop
    backend: ScriptedBackend
    audit: MemoryAudit
    fake: FakeBotAPI

    async def job(self, kind: str, payload: str, at_ms: int, spec: str = "") -> Job:
        job = await self.roost.schedule.jobs.create(
            tenant="alice", channel="telegram", chat=str(ALICE), kind=kind, spec=spec,
            payload=m(payload), tz="UTC", next_run_ms=at_ms, created_ms=at_ms - 1000,
        )  # fmt: skip
        self.roost.schedule.changed()
        return job

    def advance(self, clock: ManualTime, ms: int) -> None:
        """Move time on; the wake stands for the timer of a sleep begun meanwhile."""
        clock.advance(ms)
        self.loop.scheduler.wake()

    def texts(self) -> list[str]:
        return [m.text for m in self.fake.sent_to(ALICE)]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [dict(d) for (n, _, d) in self.audit.events if n == name]


@contextlib.asynccontextmanager
async def live(
    home: Path, fake: FakeBotAPI, *steps: object, time_: ManualTime | None = None
) -> AsyncIterator[Live]:
    settings = tg_settings(home, fake)
    backend, audit = ScriptedBackend(*steps), MemoryAudit()
    roost = await build(settings, backend=backend, audit=audit)
    # retries a few ms apart instead of seconds (the policy is the outbox's own)
    roost.schedule.outbox.policy = OutboxPolicy(base_ms=20, cap_ms=200)
    channel = TelegramChannel(
        settings.telegram,
        roost.core.answer,
        roost.command_list,
        NO_DRAFTS,
        undelivered=undelivered_hook(roost),
    )
    clock = time_.clock if time_ else wall_ms
    sleep = time_.sleep if time_ else asyncio.sleep
    loop = ScheduleLoop(roost, clock=clock, sleep=sleep, config=SchedulerConfig(max_sleep_ms=500))
    try:
        await channel.start()
        loop.deliveries.add("telegram", channel.deliver)
        loop.start()
        yield Live(roost, channel, loop, backend, audit, fake)
    finally:
        await loop.stop()
        await channel.stop()
        await roost.aclose()


async def test_a_reminder_two_seconds_ahead_arrives(home: Path, fake: FakeBotAPI) -> None:
    async with live(home, fake) as t:
        due = wall_ms() + 2000
        started = time.monotonic()
        job = await t.job("reminder", "take the bread out", due)
        await fake.wait_until(lambda: t.texts() == ["⏰ take the bread out"])
        arrived = fake.calls_of("sendMessage")[-1].at
        assert arrived - started >= 1.9  # never before its time (a lower bound only)
        stored = await t.roost.schedule.jobs.get("alice", job.id)
        assert stored is not None and stored.state == "done"
        await until(lambda: t.events("outbox.delivered"), "the delivery recorded")
    ran = t.events("job.ran")
    assert ran and ran[0]["id"] == job.id and ran[0]["outcome"] == "ok"
    assert ran[0]["kind"] == "reminder" and ran[0]["late_ms"] >= 0
    delivered = t.events("outbox.delivered")
    assert delivered and delivered[0]["channel"] == "telegram" and delivered[0]["attempts"] == 1
    assert "bread" not in repr(t.audit.events)


async def test_a_recurring_job_runs_three_times(home: Path, fake: FakeBotAPI) -> None:
    clock = ManualTime(T0)
    async with live(home, fake, time_=clock) as t:
        job = await t.job("reminder", "stretch", T0 + HOUR, spec="1h")
        for n in range(1, 4):
            t.advance(clock, HOUR)
            await fake.wait_until(lambda n=n: len(t.texts()) == n)  # type: ignore[misc]
        assert t.texts() == ["⏰ stretch"] * 3
        stored = await t.roost.schedule.jobs.get("alice", job.id)
        assert stored is not None and stored.runs == 3 and stored.next_run_ms == T0 + 4 * HOUR


async def test_a_bot_api_outage_delays_but_does_not_lose(home: Path, fake: FakeBotAPI) -> None:
    async with live(home, fake) as t:
        fake.fail("sendMessage", *[Failure.bad_gateway()] * 4)
        await t.job("reminder", "water the plants", wall_ms())
        await fake.wait_until(lambda: t.texts() == ["⏰ water the plants"])
        await until(lambda: t.events("outbox.delivered"), "the delivery recorded")
        (entry,) = await _all_entries(t.roost)
        assert entry["state"] == "delivered" and entry["attempts"] == 5
    failed = t.events("outbox.failed")
    assert [e["error"] for e in failed] == ["network"] * 4
    assert not any(e["dead"] for e in failed)
    assert t.events("outbox.delivered")[0]["attempts"] == 5
    assert len(fake.calls_of("sendMessage")) == 5  # one success, after four failures


async def test_a_blocked_bot_is_a_visible_dead_letter(home: Path, fake: FakeBotAPI) -> None:
    async with live(home, fake) as t:
        fake.fail("sendMessage", Failure(403, "Forbidden: bot was blocked by the user"))
        await t.job("reminder", "call mum", wall_ms())
        await until(lambda: t.events("outbox.failed"), "the dead letter recorded")
        (entry,) = await t.roost.schedule.outbox.failures("alice")
        assert entry.state == "dead" and entry.last_error == "forbidden"
    assert t.texts() == []
    assert t.events("outbox.failed")[-1] | {"entry": 0} == {
        "entry": 0, "channel": "telegram", "attempts": 1, "error": "forbidden", "dead": True,
    }  # fmt: skip


async def test_a_failed_final_reply_is_delivered_from_the_outbox(
    home: Path, fake: FakeBotAPI
) -> None:
    async with live(home, fake, "the answer you asked for") as t:
        attempts = t.channel.sender.policy.attempts
        fake.fail("sendMessage", *[Failure.bad_gateway()] * attempts)
        fake.push_text(ALICE, "a question")
        await fake.wait_until(lambda: t.texts() == ["the answer you asked for"])
        await until(lambda: t.events("outbox.delivered"), "the delivery recorded")
        (entry,) = [
            e for e in await _all_entries(t.roost) if e["key"].startswith("reply:")
        ]  # the reply went through the outbox, once
        assert entry["state"] == "delivered"
    assert len(fake.calls_of("sendMessage")) == attempts + 1


async def _all_entries(roost: Roost) -> list[dict[str, Any]]:
    rows = await roost.database.fetch_all("SELECT key, state, chat, attempts FROM outbox")
    return [{"key": k, "state": s, "chat": c, "attempts": a} for k, s, c, a in rows]


async def test_a_turn_jobs_answer_arrives_in_the_chat(home: Path, fake: FakeBotAPI) -> None:
    async with live(home, fake, "Good morning: three meetings today.") as t:
        job = await t.job("turn", "brief me on my day", wall_ms())
        said = f"🔁 brief me on my day (job {job.id})\nGood morning: three meetings today."
        await fake.wait_until(lambda: t.texts() == [said])  # naming its job (N10)
        await until(lambda: t.events("outbox.delivered"), "the delivery recorded")
    (request,) = t.backend.requests
    assert "brief me on my day" in str(request.messages[-1])
    assert request.system  # the full loadout prompt, as in chat
    assert t.events("job.ran")[0] | {"ms": 0, "late_ms": 0} == {
        "id": job.id, "kind": "turn", "outcome": "ok", "ms": 0, "late_ms": 0,
    }  # fmt: skip


TOOL = '''
def run() -> str:
    """Read the watched value."""
    with open("value.txt") as fh:
        return fh.read().strip()
'''


async def test_a_tool_job_posts_only_on_change(home: Path, fake: FakeBotAPI) -> None:
    create = json.dumps({"name": "watch", "description": "Watch a value", "source": TOOL})
    clock = ManualTime(T0)
    async with live(home, fake, [("forge_create", create)], "made it", time_=clock) as t:
        me = Inbound("telegram", str(ALICE), str(ALICE), "/tool save watch", "m2")
        await t.roost.core.handle(Inbound("telegram", str(ALICE), str(ALICE), "make it", "m1"))
        await t.roost.core.handle(me)
        yes = Inbound("telegram", str(ALICE), str(ALICE), "/tool save watch yes", "m3")
        saved = await t.roost.core.handle(yes)
        assert "Saved me.watch" in saved.text, saved.text
        workspace = t.roost.tenant_dirs("alice").workspace
        (workspace / "value.txt").write_text("42\n")
        payload = json.dumps({"tool": "me.watch", "mode": "change"})
        job = await t.job("tool", payload, T0 + HOUR, spec="1h")
        posted = []
        for n, value in enumerate(["42", "42", "43", "43"], start=1):
            (workspace / "value.txt").write_text(value + "\n")
            t.advance(clock, HOUR)
            await _wait_runs(t, job.id, n)
            posted.append(list(t.texts()))
        head = f"🔁 me.watch (on change) (job {job.id})\n"  # each post names its job
        assert posted == [
            [head + 'me.watch: "42"'],
            [head + 'me.watch: "42"'],
            [head + 'me.watch: "42"', head + 'me.watch: "43"'],
            [head + 'me.watch: "42"', head + 'me.watch: "43"'],
        ]
    assert [e["outcome"] for e in t.events("job.ran")] == ["ok"] * 4
    assert [e["name"] for e in t.events("tool.called")] == ["me.watch"] * 4


async def _wait_runs(t: Live, job_id: str, runs: int) -> None:
    """Until the job has `runs` runs and its outbox holds nothing undelivered."""

    async def done() -> bool:
        job = await t.roost.schedule.jobs.get("alice", job_id)
        queued = await t.roost.database.fetch_value(
            "SELECT COUNT(*) FROM outbox WHERE state = 'queued'"
        )
        return job is not None and job.runs >= runs and queued == 0

    async def runs_done() -> None:
        while not await done():
            await asyncio.sleep(0.01)  # a poll, as `until` does; the bound is HANG_S

    await asyncio.wait_for(runs_done(), HANG_S)

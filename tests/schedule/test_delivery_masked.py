"""Every outbox delivery passes the tenant's masker of now, whatever the channel.

An outbox entry (a reminder, a job's answer, `roost send --to`, a reply that
failed once) is stored masked with the masker of when it was queued. A value
the person vaults afterwards must not reach the chat when the entry goes out
later, first time or on a retry: the scheduler masks the text once more right
before a channel's deliver sees it (before session 32 only the web page did).
Real scheduler and outbox on a real SQLite file; the delivery is a fake that
records what it was handed; the vault is the tenant's values of the moment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bridge.loadout.mask import Masker
from bridge.loadout.vault import VaultError
from bridge.schedule.outbox import OutboxEntry
from bridge.schedule.runtime import JobRunner
from bridge.schedule.scheduler import Scheduler
from bridge.types.masked import Masked, TextMask
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.tenant_dirs import TenantDirs
from tests.masking import m
from tests.schedule.test_scheduler import Harness, harness
from tests.storage.test_job_store import T0, next_run

VALUE = "Q7x9-Lmn2-Door"
MASKED = "door code [vault:door]"


class Vaults:
    """Each tenant's vault as it is now: `masker(tenant)` reads it at the call."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, str]] = {"alice": {}, "bob": {}}
        self.unreadable = False
        self.asked: list[str] = []

    def masker(self, tenant: str) -> TextMask:
        self.asked.append(tenant)
        if self.unreadable:
            raise VaultError("the vault cannot be read")
        return Masker(self.values[tenant])


def masking(h: Harness, masks: Callable[[str], TextMask]) -> Scheduler:
    """The harness's scheduler, given `masks` as the composition root gives it."""
    return Scheduler(
        h.jobs, h.outbox, run_job=h.run_job, deliver=h.deliver, next_run=next_run,
        clock=h.time.clock, sleep=h.time.sleep, observe=h.observe, masks=masks,
    )  # fmt: skip


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    made = await harness(tmp_path / "roost.db")
    yield made
    await made.aclose()


async def queue(h: Harness, text: str, key: str, tenant: str = "alice", chat: str = "42") -> None:
    """An entry stored with the masker of now (no secret known yet)."""
    await h.outbox.enqueue(tenant, "telegram", chat, m(text), key, now_ms=h.time.now)


async def test_a_value_vaulted_after_the_entry_was_queued_is_masked_on_delivery(
    h: Harness,
) -> None:
    vaults = Vaults()
    scheduler = masking(h, vaults.masker)
    await queue(h, f"door code {VALUE}", "send:1")  # e.g. `roost send --to` while down
    vaults.values["alice"]["door"] = VALUE  # vaulted before the daemon delivers it
    report = await scheduler.tick()
    assert report.delivered == 1
    assert h.sent == [("42", MASKED)]
    (row,) = await h.outbox.db.fetch_all("SELECT state FROM outbox")
    assert row[0] == "delivered"


async def test_a_retry_after_the_value_was_vaulted_is_masked(h: Harness) -> None:
    vaults = Vaults()
    scheduler = masking(h, vaults.masker)
    await queue(h, f"door code {VALUE}", "job:1:1")
    h.fail_sends = 1  # the first attempt does not arrive
    assert (await scheduler.tick()).delivery_failures == 1
    vaults.values["alice"]["door"] = VALUE
    h.time.now += h.outbox.policy.cap_ms  # past the backoff
    assert (await scheduler.tick()).delivered == 1
    assert h.sent == [("42", MASKED)]


async def test_each_entry_passes_its_own_tenants_masker(h: Harness) -> None:
    vaults = Vaults()
    scheduler = masking(h, vaults.masker)
    await queue(h, f"door code {VALUE}", "k", tenant="alice", chat="1")
    await queue(h, f"door code {VALUE}", "k", tenant="bob", chat="2")
    vaults.values["bob"]["door"] = VALUE  # bob's secret; alice's text is her own
    await scheduler.tick()
    assert sorted(h.sent) == [("1", f"door code {VALUE}"), ("2", MASKED)]
    assert sorted(vaults.asked) == ["alice", "bob"]


async def test_the_handed_text_is_masked_text(h: Harness) -> None:
    vaults = Vaults()
    handed: list[OutboxEntry] = []

    async def deliver(entry: OutboxEntry) -> None:
        handed.append(entry)

    scheduler = masking(h, vaults.masker)
    scheduler.deliver = deliver
    await queue(h, "plain news", "k")
    await scheduler.tick()
    (entry,) = handed
    assert isinstance(entry.text, Masked) and entry.text == "plain news"


async def test_an_unreadable_vault_holds_the_message_back(h: Harness) -> None:
    vaults = Vaults()
    vaults.values["alice"]["door"] = VALUE
    vaults.unreadable = True
    scheduler = masking(h, vaults.masker)
    await queue(h, f"door code {VALUE}", "k")
    report = await scheduler.tick()
    assert (report.delivered, report.delivery_failures) == (0, 1)
    assert h.sent == []  # never in clear
    (entry,) = await h.outbox.failures("alice")
    assert entry.state == "queued" and entry.last_error == "VaultError"
    vaults.unreadable = False
    h.time.now += h.outbox.policy.cap_ms
    assert (await scheduler.tick()).delivered == 1
    assert h.sent == [("42", MASKED)]


async def never(inbound: Inbound, progress: DeltaSink | None) -> Final:
    raise AssertionError("no turn runs here")


async def test_the_daemons_job_runner_gives_the_scheduler_its_masker(
    h: Harness, tmp_path: Path
) -> None:
    """The daemon hands the vault's masker to `JobRunner` only (`ScheduleLoop`): the
    scheduler takes it from there when it is given none itself."""
    vaults = Vaults()
    runner = JobRunner(
        handle=never, resolve=lambda inbound: None, tool_sources=(),
        tenant_dirs=lambda tenant: TenantDirs(tenant, tmp_path / tenant),
        now=lambda: T0 / 1000, masks=lambda dirs: vaults.masker(dirs.tenant),
    )  # fmt: skip
    scheduler = Scheduler(
        h.jobs, h.outbox, run_job=runner, deliver=h.deliver, next_run=next_run,
        clock=h.time.clock, sleep=h.time.sleep,
    )  # fmt: skip
    await queue(h, f"door code {VALUE}", "k")
    vaults.values["alice"]["door"] = VALUE
    await scheduler.tick()
    assert h.sent == [("42", MASKED)]

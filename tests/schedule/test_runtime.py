"""The runtime's pieces on real SQLite: who a job speaks as, skipped runs, audit
records, the failed-reply hook, the web's missed messages, the database watch."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bridge.app.build import Roost
from bridge.core.db import connect
from bridge.schedule.jobs import Job
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore
from bridge.schedule.runtime import (
    Deliveries,
    JobRunner,
    audit_event,
    job_inbound,
    newest_message_id,
    parse_tool_payload,
    recent_messages,
    reply_to_outbox,
)
from bridge.schedule.scheduler import JobSkipped, ScheduleEvent
from bridge.types.messages import Inbound
from tests.masking import NO_SECRETS, m
from tests.schedule.database import database_of


def job(channel: str = "telegram", chat: str = "111", kind: str = "turn", **kw: object) -> Job:
    values: dict[str, object] = dict(
        tenant="alice", id="abc234", channel=channel, chat=chat, kind=kind, spec="",
        payload="what is up", tz="UTC", state="active", next_run_ms=5, created_ms=1,
        last_run_ms=None, runs=0, fail_count=0, last_error="",
    )  # fmt: skip
    values.update(kw)
    return Job(**values)  # type: ignore[arg-type]


def test_a_job_speaks_as_the_person_of_its_chat() -> None:
    private = job_inbound(job(chat="111"), 5)
    assert (private.identity, private.chat, private.is_private) == ("111", "111", True)
    group = job_inbound(job(chat="-1009:222"), 5)
    assert (group.identity, group.chat, group.is_private) == ("222", "-1009:222", False)
    web = job_inbound(job(channel="web", chat="default"), 5)
    assert (web.identity, web.channel) == ("local", "web")
    assert private.msg_id == "job:abc234:5" and private.text == "what is up"


@pytest.mark.parametrize(
    "payload",
    ["", "[]", '{"tool": "check"}', '{"tool": "me.x", "mode": "sometimes"}', '{"mode": "always"}'],
)
def test_a_malformed_tool_payload_is_refused(payload: str) -> None:
    with pytest.raises(ValueError):
        parse_tool_payload(payload)


def test_a_tool_payload_names_the_tool_and_mode() -> None:
    order = parse_tool_payload(json.dumps({"tool": "me.check_site", "mode": "always"}))
    assert (order.name, order.mode) == ("check_site", "always")
    assert parse_tool_payload('{"tool": "me.x"}').mode == "change"


async def test_a_job_of_a_person_no_longer_admitted_is_skipped(roost: Roost) -> None:
    """alice's Telegram id is not configured here: the turn must not run as anyone."""
    runner = JobRunner(
        handle=roost.core.handle,
        resolve=roost.resolver.resolve,
        tool_sources=roost.tool_sources,
        tenant_dirs=roost.tenant_dirs,
        now=lambda: 0.0,
        masks=roost.loadout.vault.masker,
    )
    with pytest.raises(JobSkipped, match="no longer belongs"):
        await runner(job(), 5)
    assert await runner(job(kind="reminder", payload="bread"), 5) == "⏰ bread"
    local = roost.settings.local_tenant
    missing = json.dumps({"tool": "me.gone", "mode": "always"})
    with pytest.raises(JobSkipped, match="not a saved tool"):
        await runner(
            job(channel="web", chat="default", kind="tool", payload=missing, tenant=local), 5
        )
    with pytest.raises(JobSkipped, match="no longer belongs"):  # web speaks for the local tenant
        await runner(job(channel="web", chat="default", tenant="alice"), 5)


def test_audit_records_carry_ids_kinds_and_times_only() -> None:
    ran = ScheduleEvent("job.run", "alice", "abc234", 9, kind="turn", ms=120, late_ms=40)
    assert audit_event(ran) == (
        "job.ran", {"id": "abc234", "kind": "turn", "outcome": "ok", "ms": 120, "late_ms": 40},
    )  # fmt: skip
    skipped = ScheduleEvent("job.failed", "alice", "abc234", 9, "JobSkipped", skipped=True)
    assert audit_event(skipped)[1]["outcome"] == "skipped"
    assert (
        audit_event(ScheduleEvent("job.failed", "a", "x", 9, "RuntimeError"))[1]["outcome"]
        == "failed"
    )
    sent = ScheduleEvent("outbox.delivered", "a", "17", 9, kind="web", attempts=2, late_ms=3)
    assert audit_event(sent) == (
        "outbox.delivered", {"entry": 17, "channel": "web", "attempts": 2, "late_ms": 3},
    )  # fmt: skip
    dead = ScheduleEvent("outbox.dead", "a", "17", 9, "forbidden", kind="telegram", attempts=1)
    assert audit_event(dead) == (
        "outbox.failed",
        {"entry": 17, "channel": "telegram", "attempts": 1, "error": "forbidden", "dead": True},
    )
    odd = ScheduleEvent("outbox.failed", "a", "17", 9, "ConnectionError: secret text")
    assert audit_event(odd)[1]["error"] == "unknown"  # only the enumerated kinds pass


async def test_an_entry_for_a_channel_that_is_not_running_is_retried() -> None:
    entry = OutboxEntry(1, "a", "matrix", "c", "k", "t", "queued", 0, 0, 1, "", None)
    with pytest.raises(DeliveryError) as caught:
        await Deliveries()(entry)
    assert caught.value.kind == "unknown" and not caught.value.permanent
    got: list[int] = []

    async def deliver(e: OutboxEntry) -> None:
        got.append(e.id)

    deliveries = Deliveries()
    deliveries.add("matrix", deliver)
    await deliveries(entry)
    assert got == [1]


async def test_a_failed_reply_is_kept_once_under_its_message_id(tmp_path: Path) -> None:
    conn = connect(tmp_path / "roost.db")
    async with database_of(tmp_path / "roost.db") as db:
        await keep_twice(conn, OutboxStore(db))


async def keep_twice(conn: sqlite3.Connection, outbox: OutboxStore) -> None:
    woken: list[int] = []
    keep = reply_to_outbox(
        outbox,
        lambda inbound: "alice" if inbound.identity == "111" else None,
        lambda: woken.append(1),
        lambda: 1000,
        lambda tenant: NO_SECRETS,
    )
    mine = Inbound("telegram", "111", "111", "q", "42")
    assert await keep(mine, "the answer")
    assert await keep(mine, "the answer")  # the same reply again: nothing added
    assert not await keep(Inbound("telegram", "999", "999", "q", "43"), "x")  # nobody's
    rows = conn.execute("SELECT tenant, chat, key, text FROM outbox").fetchall()
    assert rows == [("alice", "111", "reply:42", "the answer")] and len(woken) == 2


async def test_the_web_lists_what_a_chat_missed(tmp_path: Path) -> None:
    async with database_of(tmp_path / "roost.db") as db:
        outbox = OutboxStore(db)
        ids = [
            (await outbox.enqueue("local", "web", "default", m(f"m{n}"), f"k{n}", now_ms=n)).id
            for n in range(3)
        ]
        await outbox.enqueue("local", "web", "other", m("elsewhere"), "k9", now_ms=1)
        await outbox.enqueue("bob", "web", "default", m("not local"), "k8", now_ms=1)
        await outbox.failed(ids[1], "forbidden", 5, permanent=True)  # dead: not shown
        got = await recent_messages(db, "local", "web", "default", 0)
        after = await recent_messages(db, "local", "web", "default", ids[0])
        newest = await newest_message_id(db)
    assert [m["text"] for m in got] == ["m0", "m2"]
    assert [m["text"] for m in after] == ["m2"]
    assert newest == max(e["id"] for e in got) + 2  # the two entries of other chats came last

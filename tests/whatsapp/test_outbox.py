"""Proactive WhatsApp messages and the 24-hour customer-service window.

The outbox's deliver for channel `whatsapp` (the row's, over the real client
and the fake Cloud API): within 24 hours of the person's last message an
entry goes out as text; outside, as the configured template with the text
as its one variable, or it waits (`window`) and is made due the moment the
person writes. Meta's status callbacks are recorded against the entry;
`/jobs` says which of the two happens in this chat. Graph errors become the
outbox's error kinds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bridge.channels.whatsapp.client import GraphError
from bridge.channels.whatsapp.outbox import WAIT_MS, Template, classify
from bridge.schedule.outbox import DeliveryError, OutboxEntry, OutboxStore
from bridge.types.masked import Masked
from tests.conftest import ScriptedBackend
from tests.fakes.fake_whatsapp import Failure, FakeWhatsApp
from tests.whatsapp.conftest import ALICE, Running, running, wa_settings

HOUR_MS = 3_600_000
TEMPLATE = {"template": "roost_reminder", "template_language": "de", "template_chars": 60}


async def queued(r: Running, text: str, key: str = "job:abc:1") -> OutboxEntry:
    outbox = OutboxStore(r.roost.database)
    now = int(time.time() * 1000)
    await outbox.enqueue("alice", "whatsapp", ALICE, Masked(text), key, now_ms=now)
    (entry,) = [e for e in await outbox.claim(now) if e.key == key]
    return entry


async def last_wrote(r: Running, hours_ago: float) -> None:
    ms = int(time.time() * 1000 - hours_ago * HOUR_MS)
    await r.roost.database.execute(
        "UPDATE whatsapp_window SET last_in_ms = ? WHERE wa_id = ?", (ms, ALICE)
    )
    r.fake.last_in[ALICE] = ms / 1000


async def sent_rows(r: Running) -> list[tuple[object, ...]]:
    return await r.roost.database.fetch_all(
        "SELECT tenant, chat, entry, via, status, error FROM whatsapp_sent ORDER BY sent_ms"
    )


async def test_inside_the_window_a_reminder_is_text_and_its_statuses_are_kept(
    home: Path, fake: FakeWhatsApp
) -> None:
    fake.statuses = True
    async with running(wa_settings(home, fake), fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        entry = await queued(r, "⏰ water the **basil**")
        await r.outbox(entry)
        await fake.wait_sent(2)
        assert fake.sent[-1]["text"]["body"] == "⏰ water the *basil*"
        await fake.settle()  # Meta's "sent" and "delivered" webhooks, answered
        assert (await sent_rows(r))[-1] == ("alice", ALICE, entry.id, "text", "delivered", None)


async def test_outside_the_window_the_template_carries_the_text(
    home: Path, fake: FakeWhatsApp
) -> None:
    fake.statuses = True
    settings = wa_settings(home, fake, whatsapp=TEMPLATE)
    async with running(settings, fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        await last_wrote(r, 30)
        long = "⏰ Tomorrow:\n\n- water the basil\n\tand    the mint\n" + "x" * 100
        await r.outbox(await queued(r, long))
        await fake.wait_sent(2)
        template = fake.sent[-1]["template"]
        assert fake.sent[-1]["type"] == "template"
        assert template["name"] == "roost_reminder" and template["language"] == {"code": "de"}
        (param,) = template["components"][0]["parameters"]
        assert param["text"].startswith("⏰ Tomorrow: - water the basil and the mint x")
        assert len(param["text"]) == 60 and param["text"].endswith("…")
        await fake.settle()
        assert (await sent_rows(r))[-1][3:5] == ("template", "delivered")


async def test_outside_the_window_without_a_template_it_waits_for_the_person(
    home: Path, fake: FakeWhatsApp
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("hi", "sure")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        await last_wrote(r, 25)
        entry = await queued(r, "⏰ call mum")
        with pytest.raises(DeliveryError) as err:
            await r.outbox(entry)
        assert (err.value.kind, err.value.retry_after_ms, err.value.permanent) == (
            "window",
            WAIT_MS,
            False,
        )
        outbox = OutboxStore(r.roost.database)
        now = int(time.time() * 1000)
        assert await outbox.failed(entry.id, "window", now, retry_after_ms=WAIT_MS) == "queued"
        assert await outbox.claim(now) == [], "it waits"
        await fake.text(ALICE, "I'm back")
        await r.channel.idle()
        (again,) = await outbox.claim(int(time.time() * 1000))
        assert again.id == entry.id, "due again the moment the person wrote"
        await r.outbox(again)
    assert fake.texts()[-1] == "⏰ call mum"


async def test_meta_saying_the_window_is_closed_falls_back_to_the_template(
    home: Path, fake: FakeWhatsApp
) -> None:
    settings = wa_settings(home, fake, whatsapp=TEMPLATE)
    async with running(settings, fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        fake.fail(Failure(400, 131047, message="(#131047) Re-engagement message"))
        await r.outbox(await queued(r, "⏰ now"))
    assert [m["type"] for m in fake.sent] == ["text", "template"]


async def test_a_failed_status_is_recorded_and_jobs_says_so(home: Path, fake: FakeWhatsApp) -> None:
    fake.statuses = True
    backend = ScriptedBackend("hi")
    async with running(wa_settings(home, fake), fake, backend) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        fake.last_in[ALICE] = time.time() - 30 * 3600  # Meta thinks otherwise: 131047 later
        await r.outbox(await queued(r, "⏰ stretch"))
        await fake.settle()
        assert (await sent_rows(r))[-1][4:] == ("failed", 131047)
        await fake.text(ALICE, "/jobs")
        await r.channel.idle()
    jobs = fake.texts()[-1]
    assert "WhatsApp: you wrote last" in jobs
    assert "wait until you write again" in jobs
    assert "not delivered (error 131047)" in jobs


async def test_jobs_names_the_template_when_there_is_one(home: Path, fake: FakeWhatsApp) -> None:
    settings = wa_settings(home, fake, whatsapp=TEMPLATE)
    async with running(settings, fake, ScriptedBackend()) as r:
        await fake.text(ALICE, "/jobs")
        await r.channel.idle()
        await last_wrote(r, 48)
        await r.channel.idle()
        notes = await r.outbox.notes("alice", ALICE, time.time())
    assert "“roost_reminder” (de)" in fake.texts()[-1]
    assert notes[0].startswith("WhatsApp: more than 24 hours since you last wrote")


@pytest.mark.parametrize(
    ("error", "kind", "permanent"),
    [
        (GraphError(429, 130429, retry_after=7), "rate_limited", False),
        (GraphError(400, 131056), "rate_limited", False),
        (GraphError(500, 1), "network", False),
        (GraphError(0, kind="ClientConnectorError"), "network", False),
        (GraphError(400, 131026), "rejected", True),
        (GraphError(400, 100), "rejected", True),
        (GraphError(401, 190), "forbidden", False),
        (GraphError(403, 10), "forbidden", False),
        (GraphError(404, 0), "unknown", False),
    ],
)
def test_graph_errors_become_outbox_kinds(error: GraphError, kind: str, permanent: bool) -> None:
    found = classify(error)
    assert (found.kind, found.permanent) == (kind, permanent)
    if error.retry_after:
        assert found.retry_after_ms == 7000


def test_a_template_variable_is_one_line_without_runs_of_spaces() -> None:
    message = Template("t", "en", 30).message("49", "a\n\nb\tc      d " + "e" * 40)
    (param,) = message["template"]["components"][0]["parameters"]
    assert param["text"] == "a b c d " + "e" * 21 + "…"
    empty = Template("t", "en").message("49", " \n ")["template"]["components"][0]
    assert empty["parameters"][0]["text"] == "…"


@pytest.mark.parametrize("hours_ago", [1, 30], ids=["text", "template"])
async def test_an_entry_that_arrived_without_a_reply_is_delivered_not_retried(
    home: Path, fake: FakeWhatsApp, hours_ago: float
) -> None:
    """Meta took it and the connection dropped before the answer: the outbox counts it
    delivered (raising would send it again later, shown twice)."""
    settings = wa_settings(home, fake, whatsapp=TEMPLATE)
    async with running(settings, fake, ScriptedBackend("hi")) as r:
        await fake.text(ALICE, "hello")
        await r.channel.idle()
        await last_wrote(r, hours_ago)
        fake.drop(1)
        await r.outbox(await queued(r, "water the basil"))
    assert len(fake.sent) == 2  # the answer to "hello", then the entry once
    assert fake.sent[-1]["type"] == ("text" if hours_ago == 1 else "template")

"""A value vaulted after a Telegram message was queued never reaches the chat in clear.

End to end against the fake Bot API, wired as the daemon wires it (the real
`ScheduleLoop`, its `JobRunner` and the Telegram channel's outbox deliver):
a reminder that fired while Telegram was down is retried after the person
vaulted a value in its text, and a failed reply whose draft already shows
part of it is finished (edited in place) after such a change. Both go out
masked with the vault of now (before session 32 the retry sent the text as
it was queued).
"""

from __future__ import annotations

from pathlib import Path

from bridge.channels.common.render import Rendered
from bridge.loadout import vault
from bridge.schedule.outbox_parts import OutboxPart
from tests.masking import m
from tests.schedule.test_e2e_telegram import HOUR, T0, ManualTime, live
from tests.telegram.conftest import ALICE, fake, tg_settings
from tests.telegram.durable import durable, outbox_rows
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import until

__all__ = ["fake"]  # the fake Bot API fixture, shared with tests/telegram
VALUE = "Q7x9-Lmn2-Door"


async def test_a_reminder_retried_after_its_value_was_vaulted_arrives_masked(
    home: Path, fake: FakeBotAPI
) -> None:
    clock = ManualTime(T0)
    async with live(home, fake, time_=clock) as t:
        fake.fail("sendMessage", Failure.bad_gateway())  # Telegram is down when it fires
        await t.job("reminder", f"door code {VALUE}", T0 + HOUR)
        t.advance(clock, HOUR)
        await until(lambda: t.events("outbox.failed"), "the first attempt failed")
        vault.set_value(t.roost.tenant_dirs("alice"), "door", VALUE)
        t.advance(clock, HOUR)  # past the backoff: the retry
        await fake.wait_until(lambda: len(t.texts()) == 1)
        assert t.texts() == ["⏰ door code [vault:door]"]
        await until(lambda: t.events("outbox.delivered"), "the delivery recorded")
    calls = [c.params["text"] for c in fake.calls_of("sendMessage")]
    assert calls == [f"⏰ door code {VALUE}", "⏰ door code [vault:door]"]  # before, after


async def test_a_draft_finished_from_the_outbox_is_edited_to_the_masked_text(
    home: Path, fake: FakeBotAPI
) -> None:
    settings = tg_settings(home, fake)
    async with durable(settings, fake, None, deliver=False) as r:
        shown = await r.channel.sender.send(ALICE, Rendered(f"door code {VALUE} and"))
        await r.roost.schedule.outbox.enqueue(
            "alice", "telegram", str(ALICE), m(f"door code {VALUE} and the rest"),
            "reply:m1", now_ms=1, parts=[OutboxPart(0, "draft", str(shown))],
        )  # fmt: skip
        vault.set_value(r.roost.tenant_dirs("alice"), "door", VALUE)
        r.deliver_outbox()
        await until(lambda: outbox_rows(home)[0][1] == "delivered", "the reply delivered")
        message = fake.messages[(ALICE, shown)]
        assert (message.text, message.edits) == ("door code [vault:door] and the rest", 1)
        assert len(fake.calls_of("sendMessage")) == 1  # the draft only: finished in place

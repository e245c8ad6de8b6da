"""Outbox messages resume where they failed; a failed final goes to the outbox before any retry.

Issue #21 item 9: a 3-part outbox message whose second part failed once sent
part 1 twice (3 of 3 trials); and a final reply reached the outbox only
after the last of the sender's retries, so a kill during them lost it. Here
each part is recorded as it arrives (real SQLite), and a final whose first
attempt fails is in the outbox at once, with the draft it edits, and the
outbox's delivery finishes it in that same message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from bridge.channels.common.split import LIMIT
from bridge.channels.telegram.outbox import OutboxSender
from bridge.channels.telegram.stream import StreamTiming
from bridge.schedule.outbox import DeliveryError, OutboxStore
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from tests.masking import m
from tests.telegram.conftest import ALICE, FAST, NO_DRAFTS, running, tg_settings
from tests.telegram.durable import durable, outbox_rows, until
from tests.telegram.fake_bot_api import Failure, FakeBotAPI

ONCE = replace(NO_DRAFTS, rate_limiter=False)
# one early draft, then none until the final (the final's edit is the next one)
ONE_DRAFT = replace(FAST, timing=StreamTiming(interval_s=30.0, first_delay_s=0.05))


def three_parts() -> str:
    para = "y" * 1500
    text = "\n\n".join(f"part{n} {para}" for n in range(6))
    assert len(text) > 2 * LIMIT
    return text


async def test_a_part_that_arrived_is_not_sent_again_when_a_later_part_failed(
    home: Path, fake: FakeBotAPI
) -> None:
    for trial in range(3):  # the field report: 3 of 3 trials sent part 1 twice
        chat = ALICE + trial
        before = len(fake.calls_of("sendMessage"))
        async with running(tg_settings(home, fake), fake, options=ONCE) as r:
            outbox = OutboxStore(r.roost.database)
            await outbox.enqueue(
                "alice", "telegram", str(chat), m(three_parts()), f"job:j:{trial}", now_ms=1
            )
            deliver = OutboxSender(r.channel.sender, outbox.parts)
            (entry,) = await outbox.claim(2, 1)
            calls = 0

            def fail_second(text: str) -> Failure | None:
                nonlocal calls
                calls += 1
                return Failure.bad_gateway() if calls == 2 else None

            fake.refuse_text = fail_second
            try:
                await deliver(entry)
            except DeliveryError as exc:
                assert exc.kind == "network" and not exc.permanent
            else:
                raise AssertionError("part 2 failed once")
            await outbox.failed(entry.id, "network", 3)
            fake.refuse_text = lambda text: None
            (again,) = await outbox.claim(10_000_000, 1)
            await deliver(again)
            await outbox.delivered(again.id, 10_000_001)
        shown = [m.text for m in fake.sent_to(chat)]
        assert len(shown) == 3, shown
        assert [t.split(" ", 1)[0] for t in shown] == ["part0", "part2", "part4"]
        assert len(fake.calls_of("sendMessage")) - before == 4  # 3 parts + the failed one


class Streaming:
    """A model that streams a first piece, waits until Telegram shows it as a draft,
    then finishes the answer."""

    name = "streaming"

    def __init__(self, fake: FakeBotAPI) -> None:
        self.fake = fake

    def describe(self) -> str:
        return "streaming test model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("The first half of the answer")
        await self.fake.wait_until(lambda: bool(self.fake.sent_to(ALICE)))
        self.fake.fail("editMessageText", Failure.bad_gateway())  # the final edit fails once
        yield TextDelta(", and the second half.")
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


async def test_a_final_that_fails_once_is_kept_before_any_retry_and_edits_its_draft(
    home: Path, fake: FakeBotAPI
) -> None:
    async with durable(tg_settings(home, fake), fake, Streaming(fake), options=ONE_DRAFT):
        fake.push_text(ALICE, "question", message_id=4321)
        await until(lambda: [s for _, s, _ in outbox_rows(home)] == ["delivered"])
    (message,) = fake.sent_to(ALICE)  # the draft, now showing the whole answer
    assert message.text == "The first half of the answer, and the second half."
    assert len(fake.calls_of("sendMessage")) == 1, "the final was never sent as a new message"
    assert [k for k, _, _ in outbox_rows(home)] == ["reply:4321"]
    edits = fake.calls_of("editMessageText")
    failed_at = next(i for i, c in enumerate(edits) if "second half" in c.params["text"])
    # the channel tried the final once; the next try was the outbox's
    assert len([c for c in edits[failed_at:] if "second half" in c.params["text"]]) == 2

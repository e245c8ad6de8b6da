"""What a fast answer does not need is not made: no task for typing or a draft, one sender.

The typing indicator and the first streamed draft wait for a short delay; an
answer that ends sooner leaves nothing behind (no task made, no wait left)
and sends nothing but its text. One that lasts longer (the test fires the
`ManualTimer`) shows typing and a draft as before; the same through a
`TelegramReply` as the core drives it (`working()`, a delta, the final).
Every reply's one-attempt sender (`Sender.once`) is one object, made once.
No test here waits for a time.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bridge.channels.common.render import Rendered
from bridge.channels.telegram.reply import TelegramReply
from bridge.channels.telegram.send import Sender, SendPolicy
from bridge.channels.telegram.stream import CURSOR, StreamingReply, StreamTiming
from bridge.channels.telegram.typing import LoopTimer, Typing
from bridge.types.messages import Final, Inbound
from tests.telegram.timers import ManualTimer
from tests.waits import until

CHAT = 42


class Calls:
    """A `Sender` that records its calls (each new message gets the next id)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def of(self, method: str) -> list[Any]:
        return [arg for name, arg in self.calls if name == method]

    async def send(self, chat_id: int, chunk: Rendered, reply_to: int | None = None,
                   markup: object = None) -> int:  # fmt: skip
        self.calls.append(("send", chunk.text))
        return len(self.calls)

    async def edit(self, chat_id: int, message_id: int, chunk: Rendered,
                   markup: object = None) -> None:  # fmt: skip
        self.calls.append(("edit", chunk.text))

    async def markup(self, chat_id: int, message_id: int, markup: object) -> None:
        self.calls.append(("markup", message_id))

    async def delete(self, chat_id: int, message_id: int) -> None:
        self.calls.append(("delete", message_id))

    async def typing(self, chat_id: int) -> None:
        self.calls.append(("typing", chat_id))

    def failed(self, kind: str) -> None:
        self.calls.append(("failed", kind))


def tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def test_a_block_shorter_than_the_delay_makes_no_task_and_shows_no_typing() -> None:
    sender, timer = Calls(), ManualTimer()
    before = tasks()
    async with Typing(sender, CHAT, 4.0, 0.5, timer):  # type: ignore[arg-type]
        await asyncio.sleep(0)
        assert tasks() == before and timer.waiting == 1  # a handle, no task
    assert timer.cancelled == 1 and timer.waiting == 0
    timer.fire()  # nothing is left to fire
    await asyncio.sleep(0)
    assert sender.calls == []


async def test_a_longer_block_shows_typing_and_renews_it_until_it_ends() -> None:
    sender, timer = Calls(), ManualTimer()
    async with Typing(sender, CHAT, 4.0, 0.5, timer):  # type: ignore[arg-type]
        timer.fire()  # the delay has passed
        await until(lambda: sender.of("typing") == [CHAT], "typing shown")
        await until(lambda: timer.waiting == 1, "waiting to renew it")
        timer.fire()
        await until(lambda: len(sender.of("typing")) == 2, "typing renewed")
        await until(lambda: timer.waiting == 1, "waiting to renew it again")
    timer.fire()  # the block ended: no more typing
    await asyncio.sleep(0)
    assert len(sender.of("typing")) == 2


def a_reply(sender: Calls, timer: ManualTimer) -> TelegramReply:
    inbound = Inbound("telegram", str(CHAT), str(CHAT), "ping", "7", is_private=True)
    calls: Any = sender  # records what a `Sender` would send
    return TelegramReply(calls, StreamTiming(), None, CHAT, None, inbound, timer=timer)


async def test_a_fast_turn_of_a_reply_makes_no_task_and_sends_only_its_text() -> None:
    sender, timer = Calls(), ManualTimer()
    reply = a_reply(sender, timer)
    before = tasks()
    async with reply.working():  # as the core drives it (bridge.core.router)
        await reply.delta("pong")
        assert tasks() == before and timer.waiting == 2  # typing's and the draft's handles
    await reply.send(Final("pong"))
    assert timer.cancelled == 2 and timer.waiting == 0
    assert sender.calls == [("send", "pong")]


async def test_a_slow_turn_of_a_reply_shows_typing_until_it_ends() -> None:
    sender, timer = Calls(), ManualTimer()
    reply = a_reply(sender, timer)
    async with reply.working():
        timer.fire()  # the typing delay has passed
        await until(lambda: sender.of("typing") == [CHAT], "typing shown")
        await until(lambda: timer.waiting == 1, "waiting to renew it")
    timer.fire()  # the turn ended: no more typing
    await asyncio.sleep(0)
    await reply.send(Final("pong"))
    assert sender.of("typing") == [CHAT] and sender.of("send") == ["pong"]


async def test_a_fast_answer_makes_no_pump_and_is_one_send() -> None:
    sender, timer = Calls(), ManualTimer()
    reply = StreamingReply(sender, CHAT, None, StreamTiming(), timer=timer)  # type: ignore[arg-type]
    before = tasks()
    await reply.on_delta("pong")
    await reply.on_delta(", twice")
    assert tasks() == before and timer.waiting == 1  # one handle for the first draft
    assert await reply.finish("pong, twice") == [1]
    assert sender.calls == [("send", "pong, twice")]
    assert timer.cancelled == 1 and timer.waiting == 0


async def test_a_slow_answer_shows_a_draft_once_due_then_edits_it_to_the_final() -> None:
    sender, timer = Calls(), ManualTimer()
    reply = StreamingReply(sender, CHAT, None, StreamTiming(), timer=timer)  # type: ignore[arg-type]
    await reply.on_delta("The first half")
    timer.fire()  # the first draft is due
    await until(lambda: sender.of("send") == ["The first half" + CURSOR], "the draft")
    await until(lambda: timer.waiting == 1, "the pump waits for the next interval")
    await reply.on_delta(", and the rest.")
    assert await reply.finish("The first half, and the rest.") == [1]
    assert sender.of("edit") == ["The first half, and the rest."]
    assert len(sender.of("send")) == 1


async def test_the_loop_timer_calls_back_later_unless_cancelled() -> None:
    timer, called = LoopTimer(), asyncio.Event()
    timer.later(0.0, called.set)
    kept = timer.later(0.0, lambda: called.clear())  # cancelled: never undoes the first
    kept.cancel()
    await called.wait()
    await asyncio.sleep(0)
    assert called.is_set()


def test_the_one_attempt_sender_is_made_once_and_follows_failed() -> None:
    sender = Sender(object(), SendPolicy())  # type: ignore[arg-type]
    single = sender.once()
    assert sender.once() is single and single.pacer is sender.pacer
    assert single.policy.attempts == 1 and single.policy.flood_attempts == 0
    told: list[str] = []
    sender.failed = told.append  # wired after it was made: a new one tells the new counter
    again = sender.once()
    assert again is not single and again.pacer is sender.pacer
    again.failed("reply")
    assert told == ["reply"] and sender.once() is again

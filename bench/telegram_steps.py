"""Where a Telegram round trip's wall time and loop CPU go, step by step (a bench helper).

`Steps` wraps the round trip's steps while the measured part runs (class
attributes replaced, then restored): the update pushed into the fake Bot API,
its `getUpdates` answer stored by the durable inbox, python-telegram-bot
handing it to roost, the turn starting (`TelegramReply.working`), the final
handed to the reply, the `sendMessage` request and its answer, the inbox's
done mark, and the fake receiving the `sendMessage`. Each step records the
clock and the event loop thread's CPU time. `print_steps` shows, per step,
the median ms since the push (wall) and the median loop CPU ms spent since the
step before it in the same round trip (1 chat, one message at a time: that
CPU is whatever the loop ran meanwhile - this step's work, python-telegram-
bot's and the fake's, and the previous turn's tail still running). A
step of the previous message (its reply's answer, its inbox mark) runs after
the next push; it shows first, marked "(previous message)". Enter `Steps`
before the channel is made (it binds some steps then); `steps(roost)` is the
measured part. The steps a
set-up does not take (the echo has no turn, no inbox) are left out.
"""

from __future__ import annotations

import functools
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

from bridge.channels.common.inbox_marks import InboxMarks
from bridge.channels.telegram.channel import TelegramChannel
from bridge.channels.telegram.replay import Durable
from bridge.channels.telegram.reply import TelegramReply
from bridge.channels.telegram.send import Sender
from tests.telegram.fake_bot_api import FakeBotAPI

PUSH = "update pushed into the fake (the clock starts)"
GOT = "fake receives sendMessage (the clock stops)"
TAIL = "(previous message) "
# (class, method, label when it begins, label when it returns; "" = not recorded)
WRAPPED: tuple[tuple[type, str, str, str], ...] = (
    (Durable, "received", "getUpdates answer in: inbox stores it", "stored (committed)"),
    (TelegramChannel, "_on_update", "python-telegram-bot hands it to roost", "PTB's task ends"),
    (TelegramReply, "send", "the turn hands its final to the reply", "reply delivered"),
    (Sender, "send", "sendMessage request made", "sendMessage answer parsed"),
    (InboxMarks, "done", "inbox done mark", "done mark committed"),
)
STARTS = "the turn starts (TelegramReply.working)"
AFTER_SEND = {"sendMessage answer parsed", "reply delivered", "PTB's task ends"}
AFTER_SEND |= {"inbox done mark", "done mark committed"}
FINAL = WRAPPED[2][2]  # this message's final: the after-send steps before it are the last's


class Steps:
    """The steps of each round trip (a context manager factory, given the roost)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, float, float]] = []  # (step, wall s, loop CPU s)
        self._fakes: list[FakeBotAPI] = []
        self._saved: list[tuple[type, str, Any]] = []
        self.recording = False

    def __call__(self, roost: object = None) -> _Measuring:
        """The measured part (`round_trips`' `around`): what came before is dropped."""
        return _Measuring(self)

    def _mark(self, step: str) -> None:
        if self.recording:
            self.events.append((step, time.monotonic(), time.thread_time()))

    def _wrap(self, cls: type, name: str, wrapper: Callable[[Any], Any]) -> None:
        original = cls.__dict__[name]
        self._saved.append((cls, name, original))
        setattr(cls, name, functools.wraps(original)(wrapper(original)))

    def __enter__(self) -> Steps:
        """Wrap the steps (before the channel is made: it binds some of them)."""
        for cls, name, begins, returns in WRAPPED:
            self._wrap(cls, name, functools.partial(self._timed, begins=begins, returns=returns))
        self._wrap(TelegramReply, "working", self._working)
        self._wrap(FakeBotAPI, "push_text", self._pushed)
        return self

    def __exit__(self, *exc: object) -> None:
        for cls, name, original in reversed(self._saved):
            setattr(cls, name, original)
        self._saved.clear()

    def _timed(self, original: Any, *, begins: str, returns: str) -> Any:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            self._mark(begins)
            try:
                return await original(*args, **kwargs)
            finally:
                self._mark(returns)

        return timed

    def _working(self, original: Any) -> Any:
        def working(reply: TelegramReply) -> Any:
            self._mark(STARTS)
            return original(reply)

        return working

    def _pushed(self, original: Any) -> Any:
        def push(fake: FakeBotAPI, *args: Any, **kwargs: Any) -> Any:
            if fake not in self._fakes:
                self._fakes.append(fake)
            self._mark(PUSH)
            return original(fake, *args, **kwargs)

        return push

    def trips(self) -> list[list[tuple[str, float, float]]]:
        """Each round trip's steps, from its push to the next push, with the fake's
        receipt of the `sendMessage` (no CPU reading: the fake's own moment) in place."""
        got = sorted(c.at for fake in self._fakes for c in fake.calls if c.method == "sendMessage")
        pushes = [i for i, (step, _, _) in enumerate(self.events) if step == PUSH]
        out = []
        for this, after in itertools.pairwise(pushes):
            trip = self.events[this:after]
            start = trip[0][1]
            received = next((t for t in got if t >= start), None)
            if received is not None:
                trip = sorted([*trip, (GOT, received, float("nan"))], key=lambda e: e[1])
            out.append(trip)
        return out


class _Measuring:
    def __init__(self, steps: Steps) -> None:
        self._steps = steps

    def __enter__(self) -> None:
        self._steps.events.clear()
        self._steps.recording = True

    def __exit__(self, *exc: object) -> None:
        self._steps.recording = False


def table(steps: Steps) -> dict[str, tuple[float, float, int]]:
    """Per step: (median ms since the push, median loop CPU ms since the step before it,
    how many round trips took it). An after-send step (the reply's answer, the inbox
    mark, PTB's task ending) that comes before this message's final is the previous
    message's."""
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for trip in steps.trips():
        start, cpu_before = trip[0][1], trip[0][2]
        seen: set[str] = set()
        final = False
        for step, at, used in trip:
            name = TAIL + step if step in AFTER_SEND and not final else step
            final = final or step == FINAL
            if name in seen:
                continue
            seen.add(name)
            wall.setdefault(name, []).append((at - start) * 1000)
            if used == used:  # not the fake's receipt (no CPU reading)
                cpu.setdefault(name, []).append((used - cpu_before) * 1000)
                cpu_before = used
    return {
        name: (
            statistics.median(ms),
            statistics.median(cpu[name]) if name in cpu else float("nan"),
            len(ms),
        )
        for name, ms in wall.items()
    }


def loop_cpu(steps: Steps) -> float:
    """Median loop CPU ms of a whole round trip (from its push to its last step before
    the next push)."""
    spent = []
    for trip in steps.trips():
        read = [used for _, _, used in trip if used == used]  # the fake's receipt has none
        if len(read) > 1:
            spent.append((read[-1] - read[0]) * 1000)
    return statistics.median(spent) if spent else float("nan")


def print_steps(runs: dict[str, Steps]) -> None:
    """The step tables of the set-ups side by side (ms since the push / loop CPU ms), and
    with two set-ups the first's loop CPU less the second's per step (what the first adds
    at each step: a step only one takes counts as 0 in the other), then each one's
    median loop CPU of a whole round trip."""
    tables = {label: table(steps) for label, steps in runs.items()}
    order = sorted(  # in the first set-up's order, then the steps only others take
        {name for t in tables.values() for name in t},
        key=lambda n: next((i, t[n][0]) for i, t in enumerate(tables.values()) if n in t),
    )
    head = "".join(f" {label[:26]:>26}" for label in tables)
    pair = len(tables) == 2
    extra = f" {'cpu: 1st - 2nd':>15}" if pair else ""
    title = "step (median ms since the push / loop CPU ms since the step before)"
    print(f"  {title:70}{head}{extra}")
    for name in order:
        cells, spent = "", []
        for t in tables.values():
            wall_ms, cpu_ms, _n = t.get(name, (float("nan"), float("nan"), 0))
            cells += f" {'-':>26}" if wall_ms != wall_ms else f" {wall_ms:12.3f} / {cpu_ms:11.3f}"
            spent.append(cpu_ms if cpu_ms == cpu_ms else 0.0)
        if pair and name != GOT:  # the fake's receipt has no CPU reading
            cells += f" {spent[0] - spent[1]:+15.3f}"
        print(f"  {name[:70]:70}{cells}")
    whole = [loop_cpu(steps) for steps in runs.values()]
    cells = "".join(f" {'':12}   {ms:11.3f}" for ms in whole)
    if pair:
        cells += f" {whole[0] - whole[1]:+15.3f}"
    print(f"  {'a whole round trip, loop CPU (median)':70}{cells}")

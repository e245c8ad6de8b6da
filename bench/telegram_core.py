"""The core's share of a Telegram round trip (bench helpers for `bench.telegram_roundtrip`).

`CoreSteps` puts `bench.turn`'s step wrappers (`instrument`) on the roost of a
Telegram round trip, so the core's step table (admission, session load, the
observers, the agent, the turn's end, the audit batch...) of the 1-chat
Telegram turn prints beside `bench.turn`'s own; "handle (whole)" is the
router's `_serve` (the reply's `sendMessage` included). Each step's loop CPU
counts whatever else the loop ran while the step awaited (python-telegram-
bot's next poll, the fake, the inbox's marks): read it next to the echo.

`idle_gaps` runs `core.handle` alone (no Telegram, no HTTP) back to back and
with an idle gap between turns (the loop blocks in epoll meanwhile, as it
does between a 1-chat Telegram bench's messages), alternating, and prints the
CPU per turn of each: the same turns cost more loop CPU when the loop sleeps
between them (2026-12-03, load 0.7-0.8, 4 alternating rounds: the loop's
CPU per turn 0.91-1.11 -> 1.59-1.94 ms for a 5 ms gap; every step of the
turn costs more, none stands out), a cost a back-to-back bench such as
`bench.turn` does not see and that many chats at once (the loop never
idle) do not pay either. The step table after it shows where.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from bench.turn import (
    EchoModel,
    instrument,
    isolated_settings,
    per_thread,
    per_thread_switches,
    print_table,
    thread_cpu,
    thread_switches,
)
from bridge.app.build import build
from bridge.types.messages import Inbound

WHOLE = "handle (whole)"


class CoreSteps:
    """`bench.turn`'s step table for the turns of a round trip (a context manager
    factory, given the roost; the wrappers stay on the roost, which ends after)."""

    def __init__(self) -> None:
        self.steps: Any = None
        self._roost: Any = None

    def __call__(self, roost: Any) -> CoreSteps:
        self._roost = roost
        return self

    def __enter__(self) -> CoreSteps:
        self.steps = steps = instrument(self._roost)
        steps.order.append(WHOLE)
        core = self._roost.core
        serve = core._serve  # the channel holds `core.answer`, which calls `self._serve`

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start, began = time.perf_counter(), time.thread_time()
            try:
                return await serve(*args, **kwargs)
            finally:
                took = time.perf_counter() - start
                steps.total[WHOLE] += took
                steps.cpu[WHOLE] += time.thread_time() - began
                steps.calls[WHOLE].append(took)

        core._serve = timed
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def print(self, trips: int) -> None:
        print_table(self.steps, trips)


async def _turns(roost: Any, turns: int, gap_s: float, first: int) -> tuple[float, float, str]:
    """(loop CPU ms per turn inside `handle`, outside it, CPU by thread) for `turns`
    (message ids from `first` on)."""
    before, switched, inside = thread_cpu(), thread_switches(), 0.0
    loop_before = time.thread_time()
    for i in range(turns):
        inbound = Inbound("web", "local", "c0", f"message {i}", str(first + i))  # ids: digits
        began = time.thread_time()
        await roost.core.handle(inbound)
        inside += time.thread_time() - began
        if gap_s:
            await asyncio.sleep(gap_s)
    loop = time.thread_time() - loop_before
    spent = per_thread(before, thread_cpu(), turns)
    spent += " | switches " + per_thread_switches(switched, thread_switches(), turns)
    return inside / turns * 1e3, (loop - inside) / turns * 1e3, spent


async def idle_gaps(home: Path, turns: int, rounds: int, gap_s: float = 0.005) -> None:
    """`core.handle` of one chat, back to back vs `gap_s` idle between turns, alternating;
    then the same again under `bench.turn`'s step wrappers: each step's loop CPU per turn
    in both (the wrappers' clock reads included)."""
    await asyncio.to_thread(home.mkdir, parents=True)
    roost = await build(isolated_settings(home), backend=EchoModel())
    try:
        for i in range(50):  # warm: the tenant made, caches filled
            await roost.core.handle(Inbound("web", "local", "c0", f"warm {i}", str(i)))
        print(f"core.handle alone, 1 chat, {turns} turns a run, back to back vs {gap_s * 1e3:g}")
        print("ms idle between turns (loop CPU ms per turn inside handle / outside it):")
        first = 10**6  # message ids: digits only
        for r in range(rounds):
            for gap in (0.0, gap_s) if r % 2 == 0 else (gap_s, 0.0):
                inside, outside, spent = await _turns(roost, turns, gap, first)
                first += turns
                label = f"gap {gap * 1e3:g} ms"
                load = os.getloadavg()[0]
                print(f"  {label:10} load {load:5.2f}: {inside:6.3f} / {outside:6.3f}  | {spent}")
        steps = instrument(roost)
        cpu: dict[float, dict[str, float]] = {0.0: {}, gap_s: {}}
        for r in range(rounds):
            for gap in (0.0, gap_s) if r % 2 == 0 else (gap_s, 0.0):
                steps.reset()
                await _turns(roost, turns, gap, first)
                first += turns
                for name, used in steps.cpu.items():
                    cpu[gap][name] = cpu[gap].get(name, 0.0) + used / (turns * rounds) * 1e3
        print(f"  {'step (loop CPU ms per turn, wrapped; mean of the rounds)':<56} b2b     gap")
        for name in steps.order:
            back, idle = cpu[0.0].get(name, 0.0), cpu[gap_s].get(name, 0.0)
            print(f"  {name:<52} {back:7.3f} {idle:7.3f} {idle - back:+7.3f}")
    finally:
        await roost.aclose()

"""One set-up of `bench.telegram_roundtrip`, 1 chat, for an instruction count (a bench helper).

The host's load moves the round trip's wall and CPU figures by up to 2x in
minutes; valgrind's instruction count does not move with it. Run the same
set-up twice under callgrind with two message counts; the difference of the
totals over the difference of the counts is the instructions per round trip,
every thread of the process together (roost, python-telegram-bot, the fake
Bot API, sqlite, the audit writer), start-up and warm-up cancelled out:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/a.out \
        .venv/bin/python -m bench.telegram_instr --setup full --messages 50
    (the same with --messages 250, then: (Ir(250) - Ir(50)) / 200)

`--setup`: full (the daemon's wiring: the core and the durable inbox), core
(no inbox), echo (the channel only), inbox (the echo with the inbox). `--quick`:
10 messages (a smoke run).

`--compare echo,inbox,full` does the above itself (valgrind in child processes,
`PYTHONHASHSEED=0`) for each set-up named and prints, per round trip, the
instructions, the ratio echo/set-up (the instruction ratio the target of 0.7
is about) and what each set-up adds to the one before it (echo -> + inbox ->
+ core: the path's steps, each one's cost). With `--syscalls` it counts with
`strace -f -c` instead (system calls per round trip by name, every thread),
which callgrind does not see (the kernel's share of the round trip: SQLite's
WAL writes and locks, the hand-offs to the writer threads).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.telegram_roundtrip import round_trips

SETUPS = {
    "full": (True, True),
    "core": (True, False),
    "echo": (False, False),
    "inbox": (False, True),
}
FEW, MANY = 50, 250  # the two message counts whose difference is counted


def _run(tool: list[str], setup: str, messages: int) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    me = [sys.executable, "-m", "bench.telegram_instr", "--setup", setup]
    subprocess.run(
        [*tool, *me, "--messages", str(messages)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def instructions(setup: str, tmp: Path) -> float:
    """User-space instructions per round trip (every thread), by callgrind."""
    totals = []
    for messages in (FEW, MANY):
        out = tmp / f"cg.{setup}.{messages}"
        _run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"], setup, messages)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert found is not None, f"no total in {out}"
        totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) / (MANY - FEW)


def syscalls(setup: str, tmp: Path) -> dict[str, float]:
    """System calls per round trip by name (every thread), by `strace -f -c`."""
    counts = []
    for messages in (FEW, MANY):
        out = tmp / f"st.{setup}.{messages}"
        _run(["strace", "-f", "-c", "-o", str(out)], setup, messages)
        rows: dict[str, int] = {}
        for line in out.read_text().splitlines():
            cells = line.split()
            if len(cells) >= 5 and cells[3].isdigit() and cells[-1] != "total":
                rows[cells[-1]] = int(cells[3])
        counts.append(rows)
    names = set(counts[0]) | set(counts[1])
    return {n: (counts[1].get(n, 0) - counts[0].get(n, 0)) / (MANY - FEW) for n in names}


def compare(setups: list[str], with_syscalls: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if with_syscalls:
            print_syscalls(setups, {s: syscalls(s, Path(tmp)) for s in setups})
            return
        got = {s: instructions(s, Path(tmp)) for s in setups}
        print(f"instructions per round trip, 1 chat (callgrind, ({MANY} - {FEW}) messages):")
        floor = got.get("echo")
        before: float | None = None
        for s in setups:
            ratio = f"  echo/this {floor / got[s]:.3f}" if floor else ""
            added = f"  {got[s] - before:+,.0f} on the row before" if before is not None else ""
            print(f"  {s:6} {got[s]:13,.0f}{ratio}{added}")
            before = got[s]


def print_syscalls(setups: list[str], calls: dict[str, dict[str, float]]) -> None:
    names = sorted(
        {n for c in calls.values() for n in c},
        key=lambda n: -max(abs(c.get(n, 0.0)) for c in calls.values()),
    )
    print(f"system calls per round trip by name, 1 chat (strace -f -c, ({MANY} - {FEW}) messages):")
    print("  " + f"{'':18}" + "".join(f"{s:>9}" for s in setups))
    for name in names:
        if any(abs(calls[s].get(name, 0.0)) >= 0.5 for s in setups):
            print(f"  {name:18}" + "".join(f"{calls[s].get(name, 0.0):9.1f}" for s in setups))
    print(f"  {'all':18}" + "".join(f"{sum(calls[s].values()):9.1f}" for s in setups))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", choices=sorted(SETUPS), default="full")
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--compare", help="set-ups counted side by side, e.g. echo,inbox,full")
    parser.add_argument("--syscalls", action="store_true", help="--compare with strace")
    parser.add_argument("--quick", action="store_true", help="seconds: a smoke run (CI)")
    args = parser.parse_args()
    if args.compare:
        chosen = args.compare.split(",")
        unknown = [s for s in chosen if s not in SETUPS]
        if unknown:
            parser.error(f"unknown set-ups: {', '.join(unknown)}")
        compare(chosen, args.syscalls)
        return
    if args.quick:
        args.messages = 10
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    core, inbox = SETUPS[args.setup]
    with tempfile.TemporaryDirectory() as tmp:
        rate = await round_trips(Path(tmp), 1, args.messages, False, core, inbox)
    print(f"{args.setup}: {args.messages} round trips, {rate.cpu_ms:.2f} ms CPU each")
    print("tasks per round trip: " + ", ".join(f"{k} {v:.2f}" for k, v in rate.tasks.items()))


if __name__ == "__main__":
    asyncio.run(main())

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
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
from pathlib import Path

from bench.telegram_roundtrip import round_trips

SETUPS = {
    "full": (True, True),
    "core": (True, False),
    "echo": (False, False),
    "inbox": (False, True),
}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--setup", choices=sorted(SETUPS), default="full")
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="seconds: a smoke run (CI)")
    args = parser.parse_args()
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

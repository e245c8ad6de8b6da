"""Matrix channel benchmark: round trips/s against a real Synapse, and memory with 1,000 chats.

Round trip = the person's client sends `m.room.message` to Synapse until the
same client's `/sync` shows the bot's answer: through Synapse (twice), the
channel's sync loop (mautrix's HTTP layer), the durable sync token, the
Markdown rendering and the send. Measured with 1 direct room (sequential)
and several rooms (each sequential, all concurrent), with the full roost
(the core and a zero-latency model, wired by the real channel table) and
with the core replaced by an echo (the channel-only floor: what the Matrix
layer and Synapse cost). Synapse's own latency is part of both: the ratio
full / floor is roost's share.

Memory: creating 1,000 rooms and accounts in Synapse takes minutes, so the
1,000 chats are simulated at the channel's session layer: 1,000 people
(each a tenant through `matrix_ids`) each send one message that enters the
channel where a sync batch's messages do (`MatrixChannel._route`), is
answered by the core and sent to one real room in Synapse. Resident memory
of this process (the roost runs in it) before and after. Prints figures and
same-run ratios with the load average; no thresholds. `--quick`: a smoke run;
without Synapse (`make synapse`) it says so and exits 0.

Run: .venv/bin/python -m bench.matrix_roundtrip [--messages 100] [--rooms 10] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from bridge.app.build import build
from bridge.app.channels_up import CHANNELS, make_channels, start_channels, stop_channels
from bridge.channels.matrix.channel import MatrixChannel
from bridge.channels.matrix.events import Message
from bridge.channels.matrix.make import make_matrix
from bridge.core.config import Settings, load_settings
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from bridge.types.messages import Final, Inbound, Reply
from tests.matrix.person import Person
from tests.matrix.synapse_server import Account, NoSynapse, Synapse, start

BOUND_S = 120.0  # against a hang only


class ZeroLatency:
    name = "zero"

    def describe(self) -> str:
        return "zero-latency bench model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("pong: " + str(request.messages[-1].content)[:40])
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


async def echo(inbound: Inbound, reply: Reply) -> Final:
    """The core replaced by an echo: what the channel itself costs."""
    final = Final("pong: " + inbound.text[:40])
    await reply.send(final)
    return final


def settings_for(home: Path, server: Synapse, bot: Account, ids: list[str]) -> Settings:
    return load_settings(
        home=home,
        web={"enabled": False},
        matrix={"homeserver": server.url, "user_id": bot.user_id, "access_token": bot.access_token},
        tenants={"bench": {"matrix_ids": ids}},
    )


async def drive(people: list[Person], rooms: list[str], bot: str, per_room: int) -> float:
    async def one(person: Person, room: str) -> None:
        for n in range(per_room):
            await person.say(room, f"ping {n}")
            await person.wait(lambda n=n: len(person.from_bot(room, bot)) >= n + 1, "an answer")

    started = time.perf_counter()
    await asyncio.gather(*(one(p, r) for p, r in zip(people, rooms, strict=True)))
    return len(rooms) * per_room / (time.perf_counter() - started)


async def round_trips(
    base: Path, server: Synapse, tag: str, rooms: int, per: int, core: bool
) -> float:
    bot = server.register(f"bot{tag}")
    accounts = [server.register(f"p{tag}x{i}") for i in range(rooms)]
    people = [Person(server.url, a.user_id, a.access_token) for a in accounts]
    settings = settings_for(base / tag, server, bot, [a.user_id for a in accounts])
    roost = await build(settings, backend=ZeroLatency())
    started: list = []  # type: ignore[type-arg]
    channel: MatrixChannel
    try:
        if core:  # the real row, as `roost serve` makes it
            made = make_channels(settings, roost, CHANNELS)
            await start_channels(made, started)
            launched = made["matrix"].channel
            assert isinstance(launched, MatrixChannel)
            channel = launched
        else:
            channel = make_matrix(settings.matrix, echo, roost.database).channel
            await channel.start()
        await asyncio.wait_for(channel.synced.wait(), BOUND_S)
        joined = [await p.create_room([bot.user_id]) for p in people]
        for p, room in zip(people, joined, strict=True):
            await p.wait(lambda p=p, room=room: p.membership(room, bot.user_id) == "join", "join")
        for p, room in zip(people, joined, strict=True):  # one warm-up round trip each
            await p.say(room, "warm")
            await p.wait(lambda p=p, room=room: len(p.from_bot(room, bot.user_id)) >= 1, "warm")
            p.timeline[room].clear()
        return await drive(people, joined, bot.user_id, per)
    finally:
        if core:
            await stop_channels(started)
        else:
            await channel.stop()
        await roost.aclose()
        for p in people:
            await p.close()


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def memory(base: Path, server: Synapse, chats: int) -> tuple[int, int]:
    bot = server.register("botmem")
    person = server.register("pmem")
    ids = [f"@sim{i}:localhost" for i in range(chats)]
    settings = settings_for(base / "mem", server, bot, ids)
    roost = await build(settings, backend=ZeroLatency())
    started: list = []  # type: ignore[type-arg]
    watcher = Person(server.url, person.user_id, person.access_token)
    try:
        made = make_channels(settings, roost, CHANNELS)
        await start_channels(made, started)
        channel = made["matrix"].channel
        assert isinstance(channel, MatrixChannel)
        await asyncio.wait_for(channel.synced.wait(), BOUND_S)
        room = await watcher.create_room([bot.user_id])
        await watcher.wait(lambda: watcher.membership(room, bot.user_id) == "join", "join")
        before = rss_kib()
        for first in range(0, chats, 50):
            for i in range(first, min(chats, first + 50)):
                message = Message(room, ids[i], f"$sim{i}", "m.text", "hello, remember me")
                await channel._route(message)  # a room of two: the bot and the watcher
            await channel.idle()
        after = rss_kib()
        return before, after
    finally:
        await stop_channels(started)
        await roost.aclose()
        await watcher.close()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100, help="round trips for 1 room")
    parser.add_argument("--rooms", type=int, default=10, help="rooms for the concurrent case")
    parser.add_argument("--known-chats", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rooms, args.known_chats = 5, 2, 20
    logging.getLogger("bridge").setLevel(logging.ERROR)
    try:
        server = start()
    except NoSynapse as exc:
        print(f"matrix_roundtrip: skipped, Synapse is not available ({exc})")
        return 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            n, per = args.messages, max(1, args.messages // args.rooms)
            print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
            one = await round_trips(base, server, "a", 1, n, core=True)
            many = await round_trips(base, server, "b", args.rooms, per, core=True)
            bare_one = await round_trips(base, server, "c", 1, n, core=False)
            bare_many = await round_trips(base, server, "d", args.rooms, per, core=False)
            r = args.rooms
            print("round trips/s, person's m.room.message -> the answer in the person's /sync")
            print(f"  1 room, full roost:        {one:8.1f}/s ({1000 / one:.1f} ms each)")
            print(f"  {r} rooms, full roost:     {many:8.1f}/s ({many / one:.2f}x 1 room)")
            print(f"  1 room, channel only:      {bare_one:8.1f}/s ({1000 / bare_one:.1f} ms each)")
            print(f"  {r} rooms, channel only:   {bare_many:8.1f}/s ({bare_many / bare_one:.2f}x)")
            print(f"  full roost / channel only: {one / bare_one:.2f}x (1 room), "
                  f"{many / bare_many:.2f}x ({r} rooms)")  # fmt: skip
            print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
            before, after = await memory(base, server, args.known_chats)
            print(f"RSS (roost in this process): {before / 1024:.1f} MiB before, "
                  f"{after / 1024:.1f} MiB after {args.known_chats:,} chats simulated at the "
                  f"session layer ({(after - before) / args.known_chats:.1f} KiB per chat, "
                  f"{after / before:.2f}x); load {os.getloadavg()[0]:.2f}")  # fmt: skip
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

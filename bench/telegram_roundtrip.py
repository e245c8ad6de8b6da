"""Telegram channel benchmark: round trips/s and daemon memory.

Round trip = an update injected into the fake Bot API until the fake
receives the bot's `sendMessage`, through the real python-telegram-bot
(long polling), roost's core and a zero-latency model. Measured with 1 chat
(sequential) and 100 chats (each sequential, all concurrent), first with
the pacing off (the machinery's own ceiling), with and without the durable
inbox (every update committed to SQLite before it is confirmed, marked
answered after the reply; the daemon always runs with it), then with roost's defaults
(AIORateLimiter 30/s overall + per-chat pacing), which is the ceiling
Telegram itself would impose. Then `roost serve` as a subprocess: resident
memory at start and after 1,000 known chats (1,000 tenants, one message
each). Prints figures and same-run ratios; no thresholds.

Run: .venv/bin/python bench/telegram.py [--messages 300]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

# this file is named telegram.py: drop its own directory from the path so that
# `import telegram` finds python-telegram-bot, and put the repository there instead
sys.path.remove(sys.path[0])  # this directory (python bench/telegram.py puts it first)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.app.build import build
from bridge.app.channels_up import undelivered_hook
from bridge.channels.telegram import TelegramChannel, TelegramOptions
from bridge.channels.telegram_inbox import UpdateInbox
from bridge.channels.telegram_send import SendPolicy
from bridge.channels.telegram_stream import StreamTiming
from bridge.core.config import load_settings
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from bridge.types.messages import Final, Inbound, Reply
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
BASE_ID = 5_000_000


class ZeroLatency:
    name = "zero"

    def describe(self) -> str:
        return "zero-latency bench model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("pong: " + str(request.messages[-1].content)[:40])
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


def options(limits: bool) -> TelegramOptions:
    send = SendPolicy() if limits else SendPolicy(chat_rate_per_s=0)
    return TelegramOptions(
        poll_timeout_s=5,
        timing=StreamTiming(interval_s=1.0, first_delay_s=1.0, typing_every_s=4.0),
        send=send,
        rate_limiter=limits,
    )


async def echo(inbound: Inbound, reply: Reply) -> Final:
    """The core replaced by an echo: what the channel itself costs."""
    final = Final("pong: " + inbound.text[:40])
    await reply.send(final)
    return final


async def round_trips(
    home: Path, chats: int, per_chat: int, limits: bool, core: bool = True, inbox: bool = False
) -> float:
    ids = [BASE_ID + i for i in range(chats)]
    async with FakeBotAPI(TOKEN, max_poll_s=5) as fake:
        settings = load_settings(
            home=home,
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"bench": {"telegram_ids": ids}},
        )
        roost = await build(settings, backend=ZeroLatency())
        durable = {}
        if inbox:  # as the daemon wires it (bridge/app/channels_up.py)
            durable = {
                "undelivered": undelivered_hook(roost),
                "inbox": UpdateInbox(roost.db, "telegram:bench", "bench"),
                "parts": roost.schedule.outbox.parts,
            }
        channel = TelegramChannel(
            settings.telegram,
            roost.core.answer if core else echo,
            roost.command_list,
            options(limits),
            **durable,  # type: ignore[arg-type]
        )
        await channel.start()
        try:
            counts = dict.fromkeys(ids, 0)

            async def one_chat(uid: int) -> None:
                for n in range(per_chat):
                    fake.push_text(uid, f"ping {n}")
                    await fake.wait_until(lambda n=n: fake.sent_count[uid] > n, limit_s=120)
                    counts[uid] += 1

            started = time.perf_counter()
            await asyncio.gather(*(one_chat(uid) for uid in ids))
            elapsed = time.perf_counter() - started
        finally:
            await channel.stop()
            await roost.aclose()
    return sum(counts.values()) / elapsed


def inbox_ms(home: Path, updates: int = 2000) -> float:
    """The durable inbox's own work per update on a real roost.db: store (as one
    getUpdates answer of 1), claim, done."""
    from bridge.core.db import connect

    home.mkdir(parents=True, exist_ok=True)
    inbox = UpdateInbox(connect(home / "roost.db"), "telegram:bench", "bench")
    update = {
        "update_id": 0,
        "message": {
            "message_id": 1,
            "date": int(time.time()),
            "chat": {"id": BASE_ID, "type": "private"},
            "from": {"id": BASE_ID, "is_bot": False, "first_name": "b"},
            "text": "ping 1",
        },
    }
    started = time.perf_counter()
    for n in range(1, updates + 1):
        inbox.store([{**update, "update_id": n}])
        inbox.claim(n)
        inbox.done(n)
    return (time.perf_counter() - started) * 1000 / updates


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def daemon_memory(tmp: Path, chats: int) -> tuple[int, int]:
    ids = [BASE_ID + i for i in range(chats)]
    os.makedirs(tmp, exist_ok=True)
    config = tmp / "roost.toml"
    config.write_text(
        "".join(f"[tenants.t{i}]\ntelegram_ids = [{uid}]\n" for i, uid in enumerate(ids))
    )
    async with FakeBotAPI(TOKEN, max_poll_s=5) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
        env.update(
            ROOST_HOME=str(tmp / "home"),
            ROOST_CONFIG=str(config),
            ROOST_WEB__PORT="0",
            ROOST_LLM__PROVIDER="offline",
            ROOST_TELEGRAM__TOKEN=TOKEN,
            ROOST_TELEGRAM__API_BASE_URL=fake.base_url,
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli.main", "serve", env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            await fake.wait_call("getUpdates", limit_s=60)
            await asyncio.sleep(0.5)
            before = rss_kib(proc.pid)
            for start in range(0, chats, 50):
                batch = ids[start : start + 50]
                for uid in batch:
                    fake.push_text(uid, "hello, remember me")
                await fake.wait_until(
                    lambda b=batch: all(fake.sent_count[u] for u in b), limit_s=300
                )
            await asyncio.sleep(0.5)
            after = rss_kib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 60)
    return before, after


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300, help="round trips for 1 chat")
    parser.add_argument("--known-chats", type=int, default=1000)
    args = parser.parse_args()
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # fake: polls cut at stop
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        n, per = args.messages, max(1, args.messages // 100)
        one = await round_trips(base / "a", 1, n, limits=False)
        hundred = await round_trips(base / "b", 100, per, limits=False)
        kept_one = await round_trips(base / "g", 1, n, limits=False, inbox=True)
        kept_hundred = await round_trips(base / "h", 100, per, limits=False, inbox=True)
        bare_one = await round_trips(base / "e", 1, n, limits=False, core=False)
        bare_hundred = await round_trips(base / "f", 100, per, limits=False, core=False)
        bare_kept = await round_trips(base / "i", 1, n, limits=False, core=False, inbox=True)
        limited = await round_trips(base / "c", 100, 1, limits=True, inbox=True)
        print("round trips/s, injected update -> received sendMessage (real PTB, fake Bot API)")
        print(f"  1 chat, full roost:        {one:8.1f}/s ({1000 / one:.2f} ms each)")
        print(f"  100 chats, full roost:     {hundred:8.1f}/s ({hundred / one:.2f}x 1 chat)")
        print(f"  1 chat, + durable inbox:   {kept_one:8.1f}/s ({kept_one / one:.2f}x without)")
        ratio = kept_hundred / hundred
        print(f"  100 chats, + durable inbox:{kept_hundred:8.1f}/s ({ratio:.2f}x without)")
        print(f"  1 chat, channel only:      {bare_one:8.1f}/s ({1000 / bare_one:.2f} ms each)")
        ratio = bare_hundred / bare_one
        print(f"  100 chats, channel only:   {bare_hundred:8.1f}/s ({ratio:.2f}x 1 chat)")
        ratio = bare_kept / bare_one
        print(f"  1 chat, channel + inbox:   {bare_kept:8.1f}/s ({ratio:.2f}x channel only)")
        print(f"  full roost / channel only: {one / bare_one:.2f}x (1 chat)")
        print(f"  with inbox / channel only: {kept_one / bare_one:.2f}x (1 chat)")
        cost = inbox_ms(base / "j")
        share = cost / (1000 / bare_one)
        print(f"  inbox work per update:     {cost:8.3f} ms ({share:.1%} of a channel-only trip)")
        print(f"  100 chats, default limits: {limited:8.1f}/s (AIORateLimiter 30/s overall, inbox)")
        print("  (pacing off = no AIORateLimiter, no per-chat bucket; channel only = core")
        print("   replaced by an echo, to show what the Telegram layer itself costs)")
        before, after = await daemon_memory(base / "d", args.known_chats)
        print(f"daemon RSS: {before / 1024:.1f} MiB at start, {after / 1024:.1f} MiB after "
              f"{args.known_chats:,} known chats ({(after - before) / args.known_chats:.1f} KiB "
              f"per chat, {after / before:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())

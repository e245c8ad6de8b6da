"""WhatsApp channel benchmark: round trips/s and daemon memory.

Round trip = a signed webhook POSTed by the fake Cloud API until the fake
receives roost's `POST /{phone_number_id}/messages`, through the web server,
the signature check, the durable id check (SQLite), the real Graph client
and, with the full roost, the core and a zero-latency model. Measured with
1 chat (sequential) and 100 chats (each sequential, all concurrent), with
the full roost and with the core replaced by an echo (the channel-only
floor: what the WhatsApp layer itself costs). Then `roost serve` as a
subprocess: resident memory at start and after 1,000 known chats (1,000
tenants, one message each). Prints figures and same-run ratios; no
thresholds.

Run: .venv/bin/python -m bench.bench_whatsapp [--messages 300] [--known-chats 1000] [--quick]
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

from aiohttp import web

from bridge.app.build import build
from bridge.app.channels_up import CHANNELS, make_channels, start_channels, stop_channels
from bridge.channels.whatsapp.make import make_whatsapp
from bridge.core.config import load_settings
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from bridge.types.messages import Final, Inbound, Reply
from tests.fakes.fake_whatsapp import FakeWhatsApp

TOKEN = "EAAJBbenchTOKEN0123456789abcdefghijklmnopqrstuvwxyz"
SECRET = "0123456789abcdef0123456789abcdef"
BASE = 4915100000000


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


def settings_for(home: Path, fake: FakeWhatsApp, ids: list[str]):  # type: ignore[no-untyped-def]
    return load_settings(
        home=home,
        web={"port": 0},
        whatsapp={
            "access_token": TOKEN,
            "app_secret": SECRET,
            "phone_number_id": fake.phone_number_id,
            "api_base_url": fake.base_url,
        },
        tenants={"bench": {"whatsapp_ids": ids}},
    )


async def drive(fake: FakeWhatsApp, ids: list[str], per_chat: int) -> float:
    async def one_chat(wa: str) -> None:
        for n in range(per_chat):
            await fake.text(wa, f"ping {n}")
            await fake.wait_to(wa, n + 1)

    started = time.perf_counter()
    await asyncio.gather(*(one_chat(wa) for wa in ids))
    return len(ids) * per_chat / (time.perf_counter() - started)


async def round_trips(home: Path, chats: int, per_chat: int, core: bool) -> float:
    ids = [str(BASE + i) for i in range(chats)]
    async with FakeWhatsApp(TOKEN, SECRET) as fake:
        settings = settings_for(home, fake, ids)
        roost = await build(settings, backend=ZeroLatency())
        try:
            if core:  # the real rows: the web server and WhatsApp, as `roost serve` makes them
                started: list = []  # type: ignore[type-arg]
                made = make_channels(settings, roost, CHANNELS)
                await start_channels(made, started)
                port = made["web"].port() if made["web"].port else 0
                try:
                    fake.webhook_url = f"http://127.0.0.1:{port}/whatsapp/webhook"
                    return await drive(fake, ids, per_chat)
                finally:
                    await stop_channels(started)
            made_wa = make_whatsapp(settings.whatsapp, echo, roost.database, roost.schedule)
            app = web.Application()
            made_wa.channel.mount(app)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            await made_wa.channel.start()
            try:
                port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
                fake.webhook_url = f"http://127.0.0.1:{port}/whatsapp/webhook"
                return await drive(fake, ids, per_chat)
            finally:
                await made_wa.channel.stop()
                await runner.cleanup()
        finally:
            await roost.aclose()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def daemon_memory(tmp: Path, chats: int) -> tuple[int, int]:
    ids = [str(BASE + i) for i in range(chats)]
    os.makedirs(tmp, exist_ok=True)
    config = tmp / "roost.toml"
    config.write_text(
        "".join(f'[tenants.t{i}]\nwhatsapp_ids = ["{wa}"]\n' for i, wa in enumerate(ids))
    )
    async with FakeWhatsApp(TOKEN, SECRET) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
        env.update(
            ROOST_HOME=str(tmp / "home"),
            ROOST_CONFIG=str(config),
            ROOST_WEB__PORT="0",
            ROOST_LLM__PROVIDER="offline",
            ROOST_WHATSAPP__ACCESS_TOKEN=TOKEN,
            ROOST_WHATSAPP__APP_SECRET=SECRET,
            ROOST_WHATSAPP__PHONE_NUMBER_ID=fake.phone_number_id,
            ROOST_WHATSAPP__API_BASE_URL=fake.base_url,
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli.main", "serve", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.stdout is not None
        try:
            port = 0
            while True:
                line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
                if not line:
                    raise RuntimeError("the daemon exited")
                if "web chat at http://127.0.0.1:" in line:
                    port = int(line.split("127.0.0.1:")[1].split("/")[0])
                if line.startswith("roost: model"):
                    break
            fake.webhook_url = f"http://127.0.0.1:{port}/whatsapp/webhook"
            before = rss_kib(proc.pid)
            for start in range(0, chats, 50):
                batch = ids[start : start + 50]
                await asyncio.gather(*(fake.text(wa, "hello, remember me") for wa in batch))
                await asyncio.gather(*(fake.wait_to(wa, 1) for wa in batch))
            after = rss_kib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 60)
    return before, after


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300, help="round trips for 1 chat")
    parser.add_argument("--known-chats", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.known_chats = 20, 20
    logging.getLogger("bridge").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        n, per = args.messages, max(1, args.messages // 100)
        one = await round_trips(base / "a", 1, n, core=True)
        hundred = await round_trips(base / "b", 100, per, core=True)
        bare_one = await round_trips(base / "c", 1, n, core=False)
        bare_hundred = await round_trips(base / "d", 100, per, core=False)
        print("round trips/s, signed webhook -> received /messages (real client, fake Cloud API)")
        print(f"  1 chat, full roost:        {one:8.1f}/s ({1000 / one:.2f} ms each)")
        print(f"  100 chats, full roost:     {hundred:8.1f}/s ({hundred / one:.2f}x 1 chat)")
        print(f"  1 chat, channel only:      {bare_one:8.1f}/s ({1000 / bare_one:.2f} ms each)")
        ratio = bare_hundred / bare_one
        print(f"  100 chats, channel only:   {bare_hundred:8.1f}/s ({ratio:.2f}x 1 chat)")
        print(f"  full roost / channel only: {one / bare_one:.2f}x (1 chat), "
              f"{hundred / bare_hundred:.2f}x (100 chats)")  # fmt: skip
        print("  (channel only = the core replaced by an echo: webhook, signature, id check,")
        print("   Markdown rendering and the Graph call; no read receipt, no turn)")
        before, after = await daemon_memory(base / "e", args.known_chats)
        print(f"daemon RSS: {before / 1024:.1f} MiB at start, {after / 1024:.1f} MiB after "
              f"{args.known_chats:,} known chats ({(after - before) / args.known_chats:.1f} KiB "
              f"per chat, {after / before:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())

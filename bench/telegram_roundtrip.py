"""Telegram channel benchmark: round trips/s, where an update's time goes, daemon memory.

Round trip = an update injected into the fake Bot API until the fake
receives the bot's `sendMessage`, through the real python-telegram-bot
(long polling), roost's core and a zero-latency model. Four set-ups, each
with 1 chat (sequential) and 100 chats (each sequential, all concurrent),
pacing off (the machinery's own ceiling), the channel's default timing;
the clock starts once every chat had its first answer (the tenant's first
turns warm imports and caches, each chat's first makes its session: with
300 messages over 100 chats they were a third of the measured trips):

- full roost: `core.answer` with the durable inbox, wired as the daemon
  wires it (every update committed before it is confirmed, answered once);
- full roost without the inbox;
- channel only: the core replaced by an echo, no inbox (what python-
  telegram-bot and the fake cost: the floor);
- channel only + inbox.

The set-ups run in alternating rounds (`--rounds`), so a machine whose load
changes meanwhile affects each alike; the table shows medians and the
ratio of each to the floor of the same round. `--profile` runs the full
roost once more, 1 chat, under cProfile and prints where an update's time
goes (ms per update, by function, roost's own code and the library's), then
the same by layer (roost's Telegram channel, core, storage, audit; sqlite;
python-telegram-bot; httpx; the fake; the event loop) against the echo under
the same profiler: which layer the full roost's extra time is in; and the
database work an update awaits, statement by statement (count, wall ms). The
table also prints the bot's Bot API calls per round trip by method (a
short answer is one `sendMessage`). `--only core`: `bench.turn`'s step table
of the core inside the 1-chat Telegram round trip; `--only gaps`:
`core.handle` alone back to back vs with idle gaps between turns (what a
1-chat round trip's idle loop costs the same turns; `bench.telegram_core`);
`--only audit`: the full roost with its durable audit chain and with a sink
that records nothing (`NoChain`), alternating: what the chain costs a message.
After the table, one message's CPU split (1 chat): roost's Telegram part
(its own code, measured alone by `channel_cost`: the input path and the
reply with a sender that sends nothing, what the core does to the reply,
and the durable inbox as the round trip shows it), the core turn (the full
roost less the echo with the inbox) and python-telegram-bot, httpx and the
fake Bot API (the echo less roost's part of it); `--only split` prints just
the table and the split. Note that the echo runs roost's input path, reply
and sender too: a cut there lowers the floor as much as the full roost, so
the ratio only moves with work the full roost alone does (the core, the
inbox, `working()` and the delta). The profile's layers count the fake
(aiohttp, tests/) apart from python-telegram-bot and httpx.
Then a fast answer's reply machinery alone (CPU, tasks), the per-update work
of the inbox alone, the default limits
(AIORateLimiter 30/s + per-chat pacing) and `roost serve` as a subprocess:
resident memory at start and after 1,000 known chats. Prints figures and
same-run ratios; no thresholds. The table also splits CPU per round trip by
thread (the loop, which runs roost, PTB and the fake; sqlite; the audit
writer) and counts each thread's context switches per round trip: at 1 chat
every message wakes the audit writer, the head's sync and sometimes the
database's writer on its own, and each hand-off of the GIL between them and
the loop is a switch on both sides, which 100 chats share out over a batch.
It also counts what a round trip makes durable: audit batches (each one
fdatasync), the audit head's syncs and roost.db's write commits, inline on the
loop or as jobs on the writer's thread (`DurableCount`).
`--quick`: a smoke run (a few messages,
one round, no daemon).

Run: .venv/bin/python bench/telegram_roundtrip.py [--messages 300] [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import io
import logging
import os
import pstats
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.machine import speed_line
from bench.telegram_core import CoreSteps, idle_gaps
from bench.telegram_steps import Steps, print_steps
from bench.turn import (
    per_thread,
    per_thread_switches,
    thread_cpu,
    thread_switches,
    writer_jobs,
)
from bridge.app.build import build
from bridge.app.channels_up import undelivered_hook
from bridge.channels.telegram.channel import TelegramChannel, TelegramOptions
from bridge.channels.telegram.inbox import UpdateInbox
from bridge.channels.telegram.reply import TelegramReply
from bridge.channels.telegram.send import SendPolicy
from bridge.channels.telegram.stream import StreamTiming
from bridge.core.config import load_settings
from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta
from bridge.types.messages import Final, Inbound, Reply
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
BASE_ID = 5_000_000
WARM = 5  # round trips before the clock starts


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
    """The channel's defaults; `limits` False turns the pacing off."""
    send = SendPolicy() if limits else SendPolicy(chat_rate_per_s=0)
    return TelegramOptions(poll_timeout_s=5, send=send, rate_limiter=limits)


async def echo(inbound: Inbound, reply: Reply) -> Final:
    """The core replaced by an echo: what the channel itself costs."""
    final = Final("pong: " + inbound.text[:40])
    await reply.send(final)
    return final


@dataclass(frozen=True, slots=True)
class Rate:
    """Round trips per second (wall clock), CPU ms per round trip (this process:
    roost, python-telegram-bot and the fake Bot API together) and the bot's Bot API
    calls per round trip by method, `getUpdates` included (while measuring)."""

    per_s: float
    cpu_ms: float
    calls: dict[str, float] = field(default_factory=dict)
    threads: str = ""  # CPU ms per round trip by thread (the loop, sqlite, audit...)
    switches: str = ""  # context switches per round trip by thread (voluntary/involuntary)
    tasks: dict[str, float] = field(default_factory=dict)  # asyncio tasks made, by coroutine
    durable: str = ""  # audit batches, head syncs, roost.db commits per round trip (`DurableCount`)


class DurableCount:
    """What a round trip makes durable, counted: the audit chain's batches (each an
    appended, fdatasynced write), its head's syncs (`bridge.audit.head`, at most one per
    `LINGER_S`) and roost.db's write commits, run inline on the loop or as jobs on the
    writer's thread (each job a wake-up of that thread and a hand-off back to the loop;
    jobs that shared the commit of the job before them not counted, `writer_jobs`)."""

    def __init__(self, roost: Any) -> None:
        self._chain = roost.audit  # `MeteredAudit` hands attributes on to the chain
        self._writer = getattr(roost.database, "_writer", None)
        self._start = self._now()

    def _now(self) -> tuple[int, int, int, int]:
        batches = int(getattr(self._chain, "batches", 0))
        heads = getattr(self._chain, "_heads", None)
        ended, inline = writer_jobs(self._writer)
        return batches, int(getattr(heads, "syncs", 0)), inline, ended

    def per(self, trips: int) -> str:
        batches, syncs, inline, ended = (
            (b - a) / trips for a, b in zip(self._start, self._now(), strict=True)
        )
        return (
            f"audit batches {batches:.2f}, head syncs {syncs:.2f}, roost.db commits"
            f" {inline + ended:.2f} ({inline:.2f} inline, {ended:.2f} on its thread)"
        )


class TaskCount:
    """The asyncio tasks made while it is entered, by coroutine (the bench's own left out);
    the loop's task factory meanwhile."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._before: Any = None

    def __enter__(self) -> TaskCount:
        self._loop = asyncio.get_running_loop()
        self._before = self._loop.get_task_factory()
        self._loop.set_task_factory(self._make)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None
        self._loop.set_task_factory(self._before)

    def _make(self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        name = str(getattr(coro, "__qualname__", type(coro).__name__))
        if not name.startswith("round_trips."):
            self.made[name] += 1
        if self._before is not None:
            return self._before(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    def per(self, trips: int) -> dict[str, float]:
        return {name: n / trips for name, n in self.made.most_common()}


def calls_per_trip(calls: list[str], trips: int) -> dict[str, float]:
    """Bot API calls per round trip by method, the polls (`getUpdates`) included: every
    HTTP request the bot makes for a message."""
    counts = Counter(calls)
    return {method: n / trips for method, n in sorted(counts.items())}


@dataclass(frozen=True, slots=True)
class Setup:
    label: str
    core: bool
    inbox: bool


SETUPS = (
    Setup("full roost (daemon: + inbox)", core=True, inbox=True),
    Setup("full roost, no inbox", core=True, inbox=False),
    Setup("channel only (echo)", core=False, inbox=False),
    Setup("channel only + inbox", core=False, inbox=True),
)
FLOOR = SETUPS[2]


async def round_trips(
    home: Path,
    chats: int,
    per_chat: int,
    limits: bool,
    core: bool = True,
    inbox: bool = False,
    around: Callable[[Any], object] | None = None,
    chain: bool = True,
) -> Rate:
    """Round trips/s and CPU per trip; `around` (a context manager factory, given the
    roost) wraps the measured part; `chain` False: the roost's audit sink records
    nothing (`NoChain`: no writer thread, no sync), for `--only audit`."""
    ids = [BASE_ID + i for i in range(chats)]
    async with FakeBotAPI(TOKEN, max_poll_s=5) as fake:
        settings = load_settings(
            home=home,
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"bench": {"telegram_ids": ids}},
        )
        roost = await build(settings, backend=ZeroLatency(), audit=None if chain else NoChain())
        durable = {}
        if inbox:  # as the daemon wires it (bridge/app/channels_up.py)
            durable = {
                "undelivered": undelivered_hook(roost),
                "inbox": UpdateInbox(roost.database, "telegram:bench", "bench"),
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

            def answered(uid: int, want: int) -> bool:
                return fake.sent_count[uid] >= want

            async def one_chat(uid: int, messages: int) -> None:
                for n in range(messages):
                    want = fake.sent_count[uid] + 1
                    fake.push_text(uid, f"ping {n}")
                    await fake.wait_until(functools.partial(answered, uid, want), limit_s=120)
                    counts[uid] += 1

            await one_chat(ids[0], WARM)  # the tenant's first turns: imports, caches
            await asyncio.gather(*(one_chat(uid, 1) for uid in ids[1:]))  # each chat's first
            counts = dict.fromkeys(ids, 0)

            ctx = around(roost) if around is not None else None
            if ctx is not None:
                ctx.__enter__()  # type: ignore[attr-defined]
            first_call = len(fake.calls)
            by_thread, switched = thread_cpu(), thread_switches()
            kept = DurableCount(roost)
            tasks = TaskCount()
            started, cpu = time.perf_counter(), time.process_time()
            try:
                with tasks:
                    await asyncio.gather(*(one_chat(uid, per_chat) for uid in ids))
            finally:
                elapsed = time.perf_counter() - started
                cpu = time.process_time() - cpu
                threads, switches = thread_cpu(), thread_switches()
                made_durable = kept.per(max(sum(counts.values()), 1))
                methods = [c.method for c in fake.calls[first_call:]]
                if ctx is not None:
                    ctx.__exit__(None, None, None)  # type: ignore[attr-defined]
        finally:
            await channel.stop()
            await roost.aclose()
    trips = sum(counts.values())
    spent = per_thread(by_thread, threads, trips)
    calls = calls_per_trip(methods, trips)
    handed = per_thread_switches(switched, switches, trips)
    made = tasks.per(trips)
    return Rate(trips / elapsed, cpu * 1000 / trips, calls, spent, handed, made, made_durable)


class NoChain:
    """An audit sink that records nothing and answers a turn's batch at once (a
    `queue_many` whose future is done): the full roost without what the durable chain
    costs, to measure that cost (never a way to run roost)."""

    async def emit(self, event: str, tenant: str | None, details: object) -> None:
        return None

    async def emit_many(self, events: object) -> None:
        return None

    def queue_many(self, events: object) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


async def audit_cost(base: Path, n: int, per: int, rounds: int) -> None:
    """The full roost with the inbox (as the daemon runs it) with its durable audit chain
    and with `NoChain`, alternating, 1 chat and 100 chats: what the chain costs a
    message (its writer thread, the head's sync, the hand-offs with the loop, and for
    1 chat the sync on the answer's path). Medians of the rounds."""
    got: dict[tuple[int, bool], list[Rate]] = {}
    for r in range(rounds):
        for chats, count in ((1, n), (100, per)):
            for chain in (True, False) if r % 2 == 0 else (False, True):
                home = base / f"a{r}-{chats}-{int(chain)}"
                rate = await round_trips(home, chats, count, False, True, True, chain=chain)
                got.setdefault((chats, chain), []).append(rate)
    print(f"the durable audit chain's cost, full roost with the inbox, medians of {rounds}")
    print("alternating rounds (trips/s, CPU ms per round trip; by thread and context switches")
    print("per round trip, voluntary/involuntary, of the last round):")
    for chats in (1, 100):
        for chain in (True, False):
            runs = got[(chats, chain)]
            per_s = statistics.median(g.per_s for g in runs)
            cpu = statistics.median(g.cpu_ms for g in runs)
            label = "audit chain (as run)" if chain else "no chain (NoChain)"
            print(f"  {chats:3} chat{'s' if chats > 1 else ' '} {label:22} {per_s:7.1f}/s "
                  f"{cpu:6.2f} ms | {runs[-1].threads} | {runs[-1].switches}")  # fmt: skip
            if chain:  # what each message made durable: a batch's sync, the head's
                print(f"      per round trip: {runs[-1].durable}")
        with_chain = statistics.median(g.cpu_ms for g in got[(chats, True)])
        without = statistics.median(g.cpu_ms for g in got[(chats, False)])
        print(f"      the chain costs {with_chain - without:.2f} CPU ms per message")


async def inbox_ms(home: Path, updates: int = 2000) -> float:
    """The durable inbox's own work per update on a real roost.db through the daemon's
    `Database`: store (as one getUpdates answer of 1), take, done (bench.inbox_store
    compares it with the statements before the port)."""
    from bridge.app.database import open_database

    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    db = await open_database(home / "roost.db")
    inbox = UpdateInbox(db, "telegram:bench", "bench")
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
    try:
        started = time.perf_counter()
        for n in range(1, updates + 1):
            await inbox.store([{**update, "update_id": n}])
            if inbox.take(n):
                await inbox.done(n)
        return (time.perf_counter() - started) * 1000 / updates
    finally:
        await db.aclose()


class NoSend:
    """A `Sender` that sends nothing (the reply's own machinery, alone)."""

    async def send(self, *args: object, **kwargs: object) -> int:
        return 1

    async def edit(self, *args: object, **kwargs: object) -> None:
        return None

    async def markup(self, *args: object, **kwargs: object) -> None:
        return None

    async def delete(self, *args: object, **kwargs: object) -> None:
        return None

    async def typing(self, chat_id: int) -> None:
        return None

    def failed(self, kind: str) -> None:
        return None

    def once(self) -> NoSend:
        return self


async def reply_cost(answers: int = 5000, rounds: int = 7) -> tuple[float, float]:
    """A fast answer's reply machinery alone, driven as the core drives it (working,
    one delta, send) with a sender that sends nothing: (µs of CPU per answer, median of
    the rounds; asyncio tasks made per answer)."""
    sender, timing = NoSend(), StreamTiming()

    async def one(n: int) -> None:
        inbound = Inbound("telegram", "1", "1", f"ping {n}", str(n), is_private=True)
        reply = TelegramReply(sender, timing, None, 1, None, inbound)  # type: ignore[arg-type]
        async with reply.working():
            await reply.delta("pong: ping")
        await reply.send(Final("pong: ping"))

    for n in range(answers // 5):  # warm
        await one(n)
    spent, tasks = [], TaskCount()
    with tasks:
        for _ in range(rounds):
            began = time.thread_time()
            for n in range(answers):
                await one(n)
            spent.append((time.thread_time() - began) * 1e6 / answers)
    return statistics.median(spent), sum(tasks.made.values()) / (answers * rounds)


class CoreLike:
    """What the core does to a reply around a zero-latency answer (bridge.core.router):
    `working()` around the turn, one delta, then the final."""

    async def __call__(self, inbound: Inbound, reply: Reply) -> Final:
        final = Final("pong: " + inbound.text[:40])
        async with reply.working():
            await reply.delta(final.text)
        await reply.send(final)
        return final


async def channel_cost(home: Path, messages: int = 2000, rounds: int = 5) -> dict[str, float]:
    """roost's own Telegram work per message, in µs of loop CPU (median of `rounds`),
    without python-telegram-bot's parse of the update, HTTP or the fake: the
    channel's `_on_update` handed an `Update` parsed beforehand, its sender one that
    sends nothing (`NoSend`). `echo`: the input path and an echo's reply (the part of
    the channel-only echo that is roost's); `core-like`: the same with what the core
    does to a reply (`working()`, a delta); `+ inbox`: `core-like` through the durable
    inbox on a real roost.db (the getUpdates answer stored, taken, marked done)."""
    from telegram import Update

    async with FakeBotAPI(TOKEN, max_poll_s=5) as fake:
        settings = load_settings(
            home=home,
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"bench": {"telegram_ids": [BASE_ID]}},
        )
        roost = await build(settings, backend=ZeroLatency())
        answers: dict[str, Callable[[Inbound, Reply], Any]] = {
            "echo": echo,
            "core-like": CoreLike(),
        }
        current: list[Callable[[Inbound, Reply], Any]] = [echo]

        async def answer(inbound: Inbound, reply: Reply) -> Final:
            return await current[0](inbound, reply)  # type: ignore[no-any-return]

        inbox = UpdateInbox(roost.database, "telegram:bench", "bench")
        plain = TelegramChannel(settings.telegram, answer, roost.command_list, options(False))
        durable = TelegramChannel(
            settings.telegram,
            answer,
            roost.command_list,
            options(False),
            inbox=inbox,
            undelivered=undelivered_hook(roost),
            parts=roost.schedule.outbox.parts,
        )
        await plain.app.bot.initialize()  # getMe: the bot's name, as after a start
        await durable.app.bot.initialize()
        plain.sender = durable.sender = NoSend()  # type: ignore[assignment]
        assert durable.durable is not None
        next_id = 1

        def updates(n: int) -> list[tuple[dict[str, Any], Update]]:
            nonlocal next_id
            out = []
            for _ in range(n):
                msg = fake.message(BASE_ID, f"ping {next_id}", message_id=next_id)
                raw = {"update_id": next_id, "message": msg}
                out.append((raw, Update.de_json(raw, durable.app.bot)))
                next_id += 1
            return out

        async def one_round(kind: str, n: int) -> float:
            batch = updates(n)
            current[0] = answers["core-like" if kind == "+ inbox" else kind]
            began = time.thread_time()
            if kind == "+ inbox":
                hook = durable.durable
                assert hook is not None
                for raw, update in batch:
                    await hook.received({"ok": True, "result": [raw]})
                    await durable._on_update(update, None)  # type: ignore[arg-type]
            else:
                for _raw, update in batch:
                    await plain._on_update(update, None)  # type: ignore[arg-type]
            return (time.thread_time() - began) * 1e6 / n

        kinds = ("echo", "core-like", "+ inbox")
        try:
            for kind in kinds:  # warm
                await one_round(kind, max(1, messages // 10))
            spent: dict[str, list[float]] = {k: [] for k in kinds}
            for r in range(rounds):
                for kind in kinds if r % 2 == 0 else tuple(reversed(kinds)):
                    spent[kind].append(await one_round(kind, messages))
        finally:
            await plain.app.bot.shutdown()
            await durable.app.bot.shutdown()
            await roost.aclose()
    return {k: statistics.median(v) for k, v in spent.items()}


def print_split(cost: dict[str, float], rates: dict[tuple[str, int], list[Rate]]) -> None:
    """One message's CPU (1 chat, medians), split: roost's Telegram work (`channel_cost`),
    the core turn (the full roost less the echo with the inbox, less what the core does
    to the reply), the rest (python-telegram-bot, httpx and the fake Bot API: the echo
    less roost's part of it)."""
    cpu = {s.label: statistics.median(g.cpu_ms for g in rates[(s.label, 1)]) for s in SETUPS}
    full, floor = cpu[SETUPS[0].label], cpu[FLOOR.label]
    inbox_rt = cpu[SETUPS[3].label] - floor  # the inbox in the round trip
    channel = cost["echo"] / 1000
    reply_core = (cost["core-like"] - cost["echo"]) / 1000
    telegram = channel + reply_core + inbox_rt
    core = full - cpu[SETUPS[3].label] - reply_core
    print("one message's CPU, 1 chat (ms; medians):")
    print(f"  full roost (daemon: + inbox)        {full:6.3f}")
    print(f"    roost's Telegram part             {telegram:6.3f}  = input + reply {channel:.3f}"
          f" + working/delta {reply_core:.3f} + inbox {inbox_rt:.3f} (in the round trip;"
          f" alone {(cost['+ inbox'] - cost['core-like']) / 1000:.3f})")  # fmt: skip
    print(f"    the core turn (+ its threads)     {core:6.3f}  = full - (echo + inbox)"
          " - working/delta")  # fmt: skip
    print(f"    python-telegram-bot, httpx, fake  {floor - channel:6.3f}  = echo"
          " - roost's input + reply")  # fmt: skip
    print("  roost's Telegram code alone (no PTB, no HTTP), µs per message: "
          + ", ".join(f"{k} {v:.1f}" for k, v in cost.items()))  # fmt: skip


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
            await fake.wait_call("getUpdates", count=2, limit_s=60)  # settled into polling
            before = rss_kib(proc.pid)

            def all_answered(batch: list[int]) -> bool:
                return all(fake.sent_count[u] for u in batch)

            for start in range(0, chats, 50):
                batch = ids[start : start + 50]
                for uid in batch:
                    fake.push_text(uid, "hello, remember me")
                await fake.wait_until(functools.partial(all_answered, batch), limit_s=300)
            after = rss_kib(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 60)
    return before, after


class Profiled:
    """cProfile around the measured part (a context manager)."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()

    def __call__(self, roost: object = None) -> Profiled:
        return self

    def __enter__(self) -> Profiled:
        self.profile.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.profile.disable()


STATEMENTS = ("execute", "execute_many", "fetch_all", "fetch_one", "atomic")


def unit(what: Any) -> str:
    """An atomic unit's name: its function's (through `functools.partial`) or generator's."""
    what = getattr(what, "func", what)
    return str(getattr(what, "__qualname__", type(what).__name__))


class Statements:
    """The database work the measured part awaited, by statement (SQL text, or the name
    of an atomic unit): how many per update and their wall time (a context manager
    factory, given the roost; its `Database` is wrapped, then restored)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[float]] = {}
        self._db: Any = None

    def __call__(self, roost: Any) -> Statements:
        self._db = roost.database
        return self

    def __enter__(self) -> Statements:
        for name in STATEMENTS:
            if hasattr(self._db, name):
                setattr(self._db, name, self._timed(name, getattr(self._db, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for name in STATEMENTS:
            if name in vars(self._db):
                delattr(self._db, name)  # the class's method again

    def _timed(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(what: Any, *args: Any, **kwargs: Any) -> Any:
            key = " ".join(what.split()) if isinstance(what, str) else f"{name}: {unit(what)}"
            started = time.perf_counter()
            try:
                return await method(what, *args, **kwargs)
            finally:
                row = self.seen.setdefault(key, [0, 0.0])
                row[0] += 1
                row[1] += time.perf_counter() - started

        return timed

    def print(self, updates: int) -> None:
        shapes: dict[str, list[float]] = {}  # statements alike up to their length
        for key, (n, spent) in self.seen.items():
            row = shapes.setdefault(key[:96], [0, 0.0])
            row[0] += n
            row[1] += spent
        rows = sorted(shapes.items(), key=lambda kv: -kv[1][1])
        count = sum(n for n, _ in self.seen.values()) / updates
        wall = sum(t for _, t in self.seen.values()) * 1000 / updates
        print(f"  database work per update: {count:.2f} awaited, {wall:.3f} ms wall in all")
        print("  per update   ms wall  statement")
        for key, (n, spent) in rows:
            print(f"  {n / updates:10.2f} {spent * 1000 / updates:9.3f}  {key}")


def print_profile(profiled: Profiled, updates: int, top: int) -> None:
    """ms per update by function: own time (what to cut) and cumulative (which path)."""
    out = io.StringIO()
    stats = pstats.Stats(profiled.profile, stream=out)
    rows = []
    for (path, line, name), (_cc, calls, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = path.split("site-packages/")[-1].replace(str(Path.cwd()) + "/", "")
        rows.append((tt, ct, calls, f"{where}:{line}({name})"))
    total = sum(r[0] for r in rows)
    print(f"  profile: {total * 1000 / updates:.2f} ms of CPU per update (cProfile's own overhead")
    print("  included; compare rows with each other, not with the round trip)")
    print("  own ms/update  cum ms/update  calls/update  function")
    for tt, ct, calls, label in sorted(rows, reverse=True)[:top]:
        print(f"  {tt * 1000 / updates:13.3f}  {ct * 1000 / updates:13.3f}  "
              f"{calls / updates:12.1f}  {label[:110]}")  # fmt: skip

    print("  roost's own functions by cumulative ms/update:")
    mine = sorted((r for r in rows if r[3].startswith("bridge/")), key=lambda r: -r[1])
    for tt, ct, calls, label in mine[:top]:
        print(f"  {tt * 1000 / updates:13.3f}  {ct * 1000 / updates:13.3f}  "
              f"{calls / updates:12.1f}  {label[:110]}")  # fmt: skip


LAYERS = (  # (layer, what a profile row's file path contains), the first match wins
    ("roost: Telegram channel", "bridge/channels/"),
    ("roost: storage", "bridge/storage/"),
    ("roost: audit", "bridge/audit/"),
    ("roost: core and the rest", "/bridge/"),
    ("sqlite3 (C)", "sqlite3."),
    ("fake Bot API (aiohttp)", "aiohttp/"),  # before "http" (httpx's) and "telegram/"
    ("fake Bot API (aiohttp)", "tests/"),  # tests/telegram/fake_bot_api.py
    ("python-telegram-bot", "telegram/"),
    ("httpx, httpcore, h11, anyio", "http"),
    ("httpx, httpcore, h11, anyio", "h11/"),
    ("httpx, httpcore, h11, anyio", "anyio/"),
    ("event loop, waiting in epoll", "epoll"),
    ("event loop, waiting in epoll", "asyncio/"),
    ("event loop, waiting in epoll", "selectors"),
)


OTHER = "other (stdlib, builtins)"


def layer(path: str, name: str) -> str:
    where = f"{path} {name}"
    return next((label for label, part in LAYERS if part in where), OTHER)


def by_layer(profiled: Profiled, updates: int) -> dict[str, float]:
    """Own ms per update by layer (cProfile's clock: wall time, its overhead included).
    The time of a builtin or stdlib function goes to the layer of its callers (up to
    three calls up), in the share each caller spent in it."""
    stats: dict[Any, Any] = pstats.Stats(profiled.profile).stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}

    def charge(func: tuple[str, int, str], ms: float, depth: int) -> None:
        path, _line, name = func
        label = layer(path, name)
        callers = stats.get(func, (0, 0, 0, 0, {}))[4]
        if label != OTHER or depth == 0 or not callers:
            out[label] = out.get(label, 0.0) + ms
            return
        total = sum(c[2] for c in callers.values()) or 1.0
        for caller, (_cc, _nc, tt, _ct) in callers.items():
            charge(caller, ms * tt / total, depth - 1)

    for func, (_cc, _calls, tt, _ct, _callers) in stats.items():
        charge(func, tt * 1000 / updates, 3)
    return out


def print_layers(full: Profiled, echo: Profiled, updates: int) -> None:
    """Where the full roost's extra time per update goes, layer by layer, against the
    channel-only echo under the same profiler (1 chat)."""
    a, b = by_layer(full, updates), by_layer(echo, updates)
    print("  by layer, own ms/update under cProfile: full roost + inbox, echo, difference")
    for name in sorted(set(a) | set(b), key=lambda k: -(a.get(k, 0) - b.get(k, 0))):
        mine, floor = a.get(name, 0.0), b.get(name, 0.0)
        print(f"  {mine:8.3f} {floor:8.3f} {mine - floor:+8.3f}  {name}")
    print(f"  {sum(a.values()):8.3f} {sum(b.values()):8.3f} "
          f"{sum(a.values()) - sum(b.values()):+8.3f}  total")  # fmt: skip


async def table(base: Path, n: int, per: int, rounds: int) -> dict[tuple[str, int], list[Rate]]:
    rates: dict[tuple[str, int], list[Rate]] = {}
    ratios: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for r in range(rounds):
        for chats, count in ((1, n), (100, per)):
            this: dict[str, Rate] = {}
            order = SETUPS if r % 2 == 0 else tuple(reversed(SETUPS))  # alternate the order
            for i, setup in enumerate(order):
                home = base / f"r{r}-{chats}-{i}"
                rate = await round_trips(home, chats, count, False, setup.core, setup.inbox)
                this[setup.label] = rate
                rates.setdefault((setup.label, chats), []).append(rate)
            floor = this[FLOOR.label]
            for setup in SETUPS:
                got = this[setup.label]
                pair = (got.per_s / floor.per_s, floor.cpu_ms / got.cpu_ms)
                ratios.setdefault((setup.label, chats), []).append(pair)
    print("round trips/s, injected update -> received sendMessage (real PTB, fake Bot API),")
    print(f"medians of {rounds} alternating round(s). ratio: to the channel-only echo of the same")
    print("round (median of the rounds' ratios); cpu: CPU ms per round trip in this process")
    print("(roost + PTB + the fake), and its ratio floor/this: the rate a CPU-bound machine")
    print("would reach, less disturbed by other load than the wall clock")
    for chats in (1, 100):
        head = f"{'trips/s':>8} {'ms each':>8} {'ratio':>6} {'cpu ms':>7} {'cpu ratio':>9}"
        print(f"  {chats} chat{'s' if chats > 1 else ''}: {'':22} {head}")
        for setup in SETUPS:
            runs = rates[(setup.label, chats)]
            per_s = statistics.median(g.per_s for g in runs)
            cpu = statistics.median(g.cpu_ms for g in runs)
            pairs = ratios[(setup.label, chats)]
            wall_ratio = statistics.median(p[0] for p in pairs)
            cpu_ratio = statistics.median(p[1] for p in pairs)
            cells = (
                f"{per_s:8.1f} {1000 / per_s:8.2f} {wall_ratio:6.2f} {cpu:7.2f} {cpu_ratio:9.2f}"
            )
            print(f"    {setup.label:30} {cells}")
    echo_ms = statistics.median(g.cpu_ms for g in rates[(FLOOR.label, 1)])
    full_ms = statistics.median(g.cpu_ms for g in rates[(SETUPS[0].label, 1)])
    print(f"  roost adds {full_ms - echo_ms:.2f} CPU ms per message (1 chat, medians)")
    print("CPU ms per round trip by thread (the last round; loop: roost, PTB and the fake):")
    for chats in (1, 100):
        for setup in SETUPS:
            last = rates[(setup.label, chats)][-1]
            print(f"  {chats:3} chat{'s' if chats > 1 else ' '} {setup.label:30} {last.threads}")
    print("context switches per round trip by thread, voluntary/involuntary (the last round;")
    print("voluntary: the thread blocked, in epoll, a sync, or waiting for the GIL another")
    print("thread holds: each hand-off between the loop and a writer thread; involuntary:")
    print("other processes took its core):")
    for chats in (1, 100):
        for setup in SETUPS:
            last = rates[(setup.label, chats)][-1]
            print(f"  {chats:3} chat{'s' if chats > 1 else ' '} {setup.label:30} {last.switches}")
    print("made durable per round trip (the last round): audit batches (each one fdatasync),")
    print("the audit head's syncs, roost.db write commits (inline on the loop / on its thread):")
    for chats in (1, 100):
        for setup in SETUPS[:2]:
            last = rates[(setup.label, chats)][-1]
            print(f"  {chats:3} chat{'s' if chats > 1 else ' '} {setup.label:30} {last.durable}")
    print("asyncio tasks made per round trip (1 chat, the last round), by coroutine:")
    for setup in SETUPS:
        made = rates[(setup.label, 1)][-1].tasks
        cells = ", ".join(f"{name} {n:.2f}" for name, n in made.items() if n >= 0.05)
        print(f"  {setup.label:30} {sum(made.values()):5.2f}: {cells}")
    print("Bot API calls per round trip (the bot's HTTP requests, getUpdates included; mean of")
    print("the rounds; a short answer is one sendMessage):")
    for chats in (1, 100):
        for setup in SETUPS:
            runs = rates[(setup.label, chats)]
            methods = sorted({m for g in runs for m in g.calls})
            per_trip = {m: statistics.fmean(g.calls.get(m, 0.0) for g in runs) for m in methods}
            cells = ", ".join(f"{m} {n:.2f}" for m, n in per_trip.items())
            print(f"  {chats:3} chat{'s' if chats > 1 else ' '} {setup.label:30} {cells}")
    return rates


async def steps(base: Path, n: int) -> None:
    """Where a round trip's time goes, step by step: the full roost with the inbox (as
    the daemon runs it) next to the channel-only echo, 1 chat (bench.telegram_steps)."""
    runs = {}
    for i, setup in enumerate((SETUPS[0], FLOOR)):
        with Steps() as runs[setup.label]:
            await round_trips(
                base / str(i), 1, n, False, setup.core, setup.inbox, around=runs[setup.label]
            )
    print(f"a round trip step by step, 1 chat, {n} messages (medians; loop CPU includes")
    print("python-telegram-bot's and the fake's share of the step):")
    print_steps(runs)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300, help="round trips for 1 chat")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians)")
    parser.add_argument("--known-chats", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="where an update's time goes")
    parser.add_argument("--top", type=int, default=30, help="profile rows")
    parser.add_argument("--steps", action="store_true", help="each step's ms (1 chat)")
    parser.add_argument(
        "--only",
        choices=("table", "split", "profile", "steps", "core", "gaps", "audit"),
        help="just one part",
    )
    parser.add_argument("--quick", action="store_true", help="seconds: a smoke run (CI)")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds, args.known_chats = 20, 1, 0
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # fake: polls cut at stop
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(speed_line())
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        n, per = args.messages, max(1, args.messages // 100)
        if args.only is None or args.only in ("table", "split"):
            rates = await table(base / "t", n, per, args.rounds)
            cost = await channel_cost(base / "u", 200 if args.quick else 2000)
            print_split(cost, rates)
        if args.steps or args.quick or args.only == "steps":
            await steps(base / "w", n)
        if args.profile or args.only == "profile":
            profiled = Profiled()
            await round_trips(base / "p", 1, n, False, True, True, around=profiled)
            print(f"per-update profile, full roost with inbox, 1 chat, {n} updates:")
            print_profile(profiled, n, args.top)
            echoed = Profiled()
            await round_trips(base / "q", 1, n, False, False, False, around=echoed)
            print_layers(profiled, echoed, n)
            statements = Statements()  # not under the profiler: the statements' own time
            await round_trips(base / "s", 1, n, False, True, True, around=statements)
            print(f"database work of the full roost with inbox, 1 chat, {n} updates:")
            statements.print(n)
        if args.only == "core":
            core = CoreSteps()
            await round_trips(base / "k", 1, n, False, True, True, around=core)
            print(f"the core's steps in the Telegram turn (bench.turn's table), 1 chat, {n}")
            print("updates, full roost with the inbox; handle (whole): the router's _serve")
            core.print(n)
        if args.only == "audit" or args.quick:  # in the smoke run too, so it cannot rot
            await audit_cost(base / "a", n, per, args.rounds)
        if args.only == "gaps":
            await idle_gaps(base / "g", n, max(2, args.rounds))
        if args.only is not None:
            return
        micros, made = await reply_cost(500 if args.quick else 5000)
        print(f"  a fast answer's reply:     {micros:8.1f} µs CPU, {made:.2f} tasks (working,")
        print("                             a delta, send; a sender that sends nothing)")
        inbox_cost = await inbox_ms(base / "j", 200 if args.quick else 2000)
        print(
            f"  inbox work per update:     {inbox_cost:8.3f} ms (store, take, done; one roost.db)"
        )
        limited = await round_trips(base / "c", 100, 1, limits=True, inbox=True)
        rate = f"{limited.per_s:8.1f}/s"
        print(f"  100 chats, default limits: {rate} (AIORateLimiter 30/s overall, inbox)")
        print("  (pacing off above = no AIORateLimiter, no per-chat bucket; channel only = core")
        print("   replaced by an echo, to show what the Telegram layer itself costs)")
        if args.known_chats:
            before, after = await daemon_memory(base / "d", args.known_chats)
            per_chat = (after - before) / args.known_chats
            print(f"daemon RSS: {before / 1024:.1f} MiB at start, {after / 1024:.1f} MiB after "
                  f"{args.known_chats:,} known chats ({per_chat:.1f} KiB per chat, "
                  f"{after / before:.2f}x)")  # fmt: skip
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())

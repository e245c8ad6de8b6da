"""Per-turn overhead of roost itself, and turns per second over HTTP.

Prints, in one run on this machine:
1. `core.handle` latency with an in-process zero-latency model (everything
   roost does per turn: tenant, lock, session load/store in SQLite, prompt,
   agent loop, audit), p50/p99, next to a bare `await` of the same model;
2. turns/s through `POST /api/chat` with 1, 10 and 100 concurrent clients,
   against (a) a zero-latency model in the daemon and (b) the fake
   OpenAI-compatible server over HTTP, next to a bare aiohttp echo handler
   under the same load — each server in its own process, clients here.

Before the figures, where one turn's time goes: each step of `core.handle`
(admission, session load, budgets, the `outputs/` scans before and after the
model, grading and corrections, the prompt, the Now note with the memory
injection, the tool list, the agent loop, the turn's end (usage, the session
store, the turn log: one unit), recall indexing, the audit batch, the
compactor) timed by wrappers the bench puts on the built objects, in ms per
turn, with the floor of a durable audit chain (one appended line and its
`fdatasync`) measured in the same run; then the turn's end's critical path,
segment by segment (`EndPath`: the batch queued, held by the audit writer,
encoded, synced, the head moved, settled on the loop, `handle` returning, and
beside it the end's unit), p50 and mean over the turns.

Over HTTP each server also reports its CPU per turn (its process, and its loop thread:
minus the in-process `turns at once` loop figure, that is what HTTP and the web channel
add), next to a bare aiohttp echo and to the web channel over a `handle` that answers at
once (`channel only`: HTTP and the channel's plumbing, no core). `--http-only` skips
the in-process part, `--points 10` picks the client counts, `--http-profile 10` prints
cProfile's report of the channel-only and the roost server's loop at 10 clients,
the roost servers, and the in-process roost once warm, set their collector as `roost
serve` does once ready (`bridge.cli.collector`: start-up frozen, young collections
every 5,000), and `--python-gc` leaves Python's default collector instead (an A/B),
`--stream` posts the turns to `/api/chat/stream` (Server-Sent Events, as the page
does; the bare echo stays a plain JSON answer). The
clients post plain HTTP/1.1 over keep-alive connections (`Poster`): they share the
machine's cores with the servers, and their own CPU per turn is printed too.

Run: `python -m bench.turn [--turns N] [--seconds S] [--quick]`
(`--quick`: a few hundred turns and short load points, in seconds; `--budget N`: a
daily token budget for every tenant, so the budget check reads; `--profile`:
cProfile's function calls per turn and top functions by own and by cumulative time,
on the loop thread's CPU clock, and with `--profile-match REGEX` every function whose
`file:line(name)` matches; `--inline-writes
on|off|alone`: SQLite's short writes on the loop's thread, on its writer thread, or
inline only while one turn is in flight; `--recall off`: no exchange indexed for
recall, the A/B of what the index costs a turn; `--callgrind`: instructions per turn
instead, one at a time and `--clients` at once, every thread, counted by valgrind's
callgrind in a child process over the measured turns only (after warm turns, toggled by
`callgrind_control`): the one figure the host's load does not move, for an A/B of two
trees on a shared machine; with `--http-only`, of a server answering `POST /api/chat`
instead: the roost server (zero-latency model), the web channel alone and the bare
aiohttp echo, each under valgrind in turn, the clients here posting over TCP and left
uncounted: what HTTP, the web channel and the turn cost the server). Also printed:
CPU per turn (`time.process_time`, every thread of the process: the audit
writer's too, then split by thread: the loop, the audit writer, the head's sync,
the database's writer and readers, with each thread's context switches per turn:
a writer thread's wake-up and each GIL hand-off with the loop are switches), with
turns at once the user CPU of all threads per turn and the turns/s one GIL allows at
most if all of it held the GIL (every thread's Python shares it: a writer thread's
encoding counts as much as the loop's), and
the SQL statements per turn on each connection, figures that load on a shared
machine moves little or not at all; the writer's jobs per turn (each
a commit: inline on the loop or on its thread) with turns at once, and over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import gc
import io
import json
import multiprocessing as mp
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.machine import speed_line
from bridge.app.build import build
from bridge.channels.web.conns import UNBUDGETED
from bridge.cli import collector
from bridge.core.config import load_settings
from bridge.types.messages import Inbound
from tests.conftest import ScriptedBackend

TOKEN = "bench-token-0123456789"
# the web channel's limits in the bench: event streams (`--stream`) of every client at once
LIMITS = dataclasses.replace(UNBUDGETED, streams_per_token=1000, streams_per_tenant=1000)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class EchoModel(ScriptedBackend):
    def __init__(self) -> None:
        super().__init__()

    async def stream(self, request: Any) -> Any:
        self.steps.append(f"echo: {request.messages[-1].content}")
        async for event in super().stream(request):
            yield event
        self.requests.clear()


def isolated_settings(home: Path, **extra: str) -> Any:
    for key in list(os.environ):
        if key.startswith("ROOST_"):
            del os.environ[key]
    cfg = home / "roost.toml"
    cfg.write_text("")
    os.environ["ROOST_CONFIG"] = str(cfg)
    os.environ["ROOST_HOME"] = str(home / "home")
    os.environ.update(extra)
    return load_settings()


class Steps:
    """Wall time per named step, summed over turns (wrappers put on built objects), and
    the loop thread's CPU time in it (`time.thread_time`: what is left of the wall time
    is waiting, on another thread, the disk or the GIL). A step awaited while another
    task runs (concurrent turns) counts that task's CPU too: read the CPU column of a
    sequential run."""

    def __init__(self) -> None:
        self.total: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, list[float]] = defaultdict(list)
        self.order: list[str] = []

    def timer(self, name: str) -> Callable[[float, float], None]:
        """What records one call of step `name`, begun at (perf_counter, thread_time)."""
        total, cpu, calls = self.total, self.cpu, self.calls[name]
        if name not in self.order:
            self.order.append(name)

        def done(start: float, began: float) -> None:
            took = time.perf_counter() - start
            total[name] += took
            cpu[name] += time.thread_time() - began
            calls.append(took)

        return done

    def wrap(self, obj: Any, attr: str, name: str) -> None:
        fn = getattr(obj, attr)
        done = self.timer(name)
        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*a: Any, **k: Any) -> Any:
                start, began = time.perf_counter(), time.thread_time()
                try:
                    return await fn(*a, **k)
                finally:
                    done(start, began)

            setattr(obj, attr, timed_async)
        else:

            def timed(*a: Any, **k: Any) -> Any:
                start, began = time.perf_counter(), time.thread_time()
                try:
                    return fn(*a, **k)
                finally:
                    done(start, began)

            setattr(obj, attr, timed)

    def reset(self) -> None:
        self.total.clear()
        self.cpu.clear()
        for calls in self.calls.values():  # the wrappers hold these lists
            calls.clear()


def instrument(roost: Any) -> Steps:
    """Time each step of a turn; names starting with two spaces run inside the one above."""
    import bridge.core.turn as turn_module

    steps, core = Steps(), roost.core
    runner = core._turns
    steps.wrap(core.access, "admit", "admission (tenant, pairing)")
    steps.wrap(runner.sessions, "load", "session load")
    if runner._meter is not None:
        steps.wrap(runner._meter, "refusal", "budgets (refusal check)")
    if runner._senses is not None:
        steps.wrap(runner._senses, "prepare", "outputs/ scan + attachments, before")
    for observer in runner._observers:
        steps.wrap(observer, "before_turn", f"before: {type(observer).__name__}")
    steps.wrap(runner, "_masks", "vault masker")
    steps.wrap(runner, "_agent", "agent (prompt, note, tools, model loop)")
    steps.wrap(runner._prompt, "system_prompt_parts", "  system prompt (snapshot, render)")
    steps.wrap(runner, "_system", "  system prompt + stable-prefix mask")
    if runner._note is not None:
        steps.wrap(runner, "_note", "  Now note + memory injection")
    for source in runner._sources:
        steps.wrap(source, "tools_for", "  tool lists (all sources)")
    steps.wrap(turn_module, "run_agent", "  run_agent (model, redaction)")
    for observer in runner._observers:
        steps.wrap(observer, "after_turn", f"after: {type(observer).__name__}")
    steps.wrap(runner, "_end", "turn's end: usage + session + turn log (ONE unit)")
    steps.wrap(runner.sessions, "append", "  session store (append, the end's unit)")
    if runner._exchanges is not None:
        steps.wrap(runner._exchanges, "record_exchange", "recall indexing (queued)")
        # written after the reply by the indexer's task: not on the turn's path, not summed
        steps.wrap(runner._exchanges, "admit", "  recall index write (background, per batch)")
    runner._audit = _TimedQueue(runner._audit, steps.timer("audit batch (durable)"))
    steps.wrap(runner.compactor, "after_turn", "compactor check")
    if runner._senses is not None:
        steps.wrap(runner._senses, "handed_out", "outputs/ scan, after")
    steps.wrap(runner, "run", "TurnRunner.run (all of the above but admission)")
    return steps


class _TimedQueue:
    """The turn's audit sink, its `queue_many` timed from the call until the batch is
    durable (the future's callback, on the loop: the CPU column is the loop's meanwhile)."""

    def __init__(self, inner: Any, done: Callable[[float, float], None]) -> None:
        self.inner, self._done = inner, done

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def queue_many(self, events: Any) -> Any:
        start, began = time.perf_counter(), time.thread_time()
        durable = self.inner.queue_many(events)
        if durable is None:
            self._done(start, began)
        else:
            durable.add_done_callback(lambda _f: self._done(start, began))
        return durable


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each live thread, summed by name (trailing numbers dropped:
    `asyncio_3` and `asyncio_4` are one pool)."""
    out: dict[str, float] = defaultdict(float)
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        try:
            clock = time.pthread_getcpuclockid(thread.ident)
            used = time.clock_gettime(clock)
        except (OSError, AttributeError):  # ended meanwhile, or not Linux
            continue
        name = "loop" if thread is threading.main_thread() else thread.name
        out[name.rstrip("0123456789").rstrip("_-")] += used
    return out


_CTXT = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")  # in /proc/.../status


def thread_switches() -> dict[str, tuple[int, int]]:
    """Context switches so far of each live thread, (voluntary, involuntary), summed by
    name as `thread_cpu` sums them (Linux's /proc/self/task; empty elsewhere). A
    voluntary switch is the thread blocking: in epoll, on a lock or a queue, in a sync,
    or waiting for the GIL another thread holds (each hand-off between the loop and a
    writer thread costs one or more on each side); an involuntary one, the kernel
    giving its core to another process (the machine's load)."""
    names = {t.native_id: t for t in threading.enumerate() if t.native_id is not None}
    out: dict[str, tuple[int, int]] = {}
    for tid, thread in names.items():
        try:
            with open(f"/proc/self/task/{tid}/status", encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:  # ended meanwhile, or not Linux
            continue
        counts = {k: int(v) for k, _, v in (ln.partition(":\t") for ln in lines) if k in _CTXT}
        name = "loop" if thread is threading.main_thread() else thread.name
        name = name.rstrip("0123456789").rstrip("_-")
        was = out.get(name, (0, 0))
        out[name] = (was[0] + counts.get(_CTXT[0], 0), was[1] + counts.get(_CTXT[1], 0))
    return out


def user_cpu() -> float | None:
    """User CPU seconds so far of every thread of this process (Linux's /proc/self/task,
    in clock ticks; None elsewhere): the Python all threads run, which one GIL serialises
    (system time, a sync or a statement in SQLite, runs beside it)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        total += int(fields[11])  # utime: the 14th field, the 12th after the name
    return total / ticks


def gil_line(before: float | None, after: float | None, turns: int) -> str:
    """The user CPU of all threads per turn and the turns/s one GIL allows at most if all
    of it held the GIL ('' without /proc)."""
    if before is None or after is None or after <= before:
        return ""
    per = (after - before) / turns * 1e3
    return (
        f"  user CPU of all threads {per:.3f} ms per turn: {1e3 / per:.0f} turns/s at most"
        " if all of it held the GIL (SQLite's own runs without it; HTTP adds its own)"
    )


def per_thread_switches(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], turns: int
) -> str:
    """`name voluntary/involuntary` context switches per turn for each thread group that
    switched between the two snapshots (`thread_switches`)."""
    used = {}
    for name, (vol, inv) in after.items():
        was = before.get(name, (0, 0))
        used[name] = ((vol - was[0]) / turns, (inv - was[1]) / turns)
    shown = sorted((kv for kv in used.items() if sum(kv[1]) >= 0.005), key=lambda kv: -kv[1][0])
    return ", ".join(f"{name} {vol:.2f}/{inv:.2f}" for name, (vol, inv) in shown)


def per_thread(before: dict[str, float], after: dict[str, float], turns: int) -> str:
    """`name ms` per turn for each thread group that used CPU between the two snapshots."""
    used = {k: (v - before.get(k, 0.0)) / turns * 1e3 for k, v in after.items()}
    shown = sorted((kv for kv in used.items() if kv[1] >= 0.0005), key=lambda kv: -kv[1])
    return ", ".join(f"{name} {ms:.3f}" for name, ms in shown)


class Floor:
    """One appended line and its fdatasync (a durable chain's floor), timed between turns
    so the disk it meets is the disk the turns met."""

    def __init__(self, directory: Path) -> None:
        self._fd = os.open(directory / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.times: list[float] = []

    def once(self) -> None:
        start = time.perf_counter()
        os.write(self._fd, b'{"seq": %d, "event": "message.answered"}\n' % len(self.times))
        os.fdatasync(self._fd)
        self.times.append(time.perf_counter() - start)

    def close(self) -> None:
        os.close(self._fd)


class EndPath:
    """The critical path of one turn's end, timed across threads (`perf_counter` marks put
    by wrappers on the audit chain's writer steps and on the turn's `_end`): from the
    batch queued to the writer holding it (its wake-up and the GIL), to its records
    encoded (fitting, lock, tail), synced (write + fdatasync), the head moved, the loop
    settling the batch (unlock, `call_soon_threadsafe`, the loop's wake-up) and `handle`
    returning (the turn's tail); beside it, the end's unit (run meanwhile on the loop)."""

    SEGMENTS = (
        ("start", "queued", "handle start -> batch queued (model, observers, ...)"),
        ("queued", "taken", "  -> the writer holds it (wake-up, GIL)"),
        ("taken", "encoded", "  -> records fitted, locked, tail, encoded"),
        ("encoded", "synced", "  -> written + fdatasynced"),
        ("synced", "headed", "  -> head moved"),
        ("headed", "settled", "  -> settled on the loop (unlock, wake-up)"),
        ("settled", "returned", "  -> handle returns (the turn's tail)"),
        ("queued", "ended", "beside it: batch queued -> the end's unit done"),
        ("ended", "settled", "  the end's unit done -> batch settled"),
    )

    def __init__(self, roost: Any) -> None:
        self.marks: dict[str, float] = {}
        self.rows: list[dict[str, float]] = []
        chain = roost.core._turns._audit
        for _ in range(8):  # under the app's wrappers (metrics): the chain itself
            if hasattr(type(chain), "_commit") or not hasattr(chain, "inner"):
                break  # (a wrapper may hand on every attribute it lacks: its type's)
            chain = chain.inner
        self.ok = hasattr(type(chain), "_commit")
        if not self.ok:
            return
        self._at(chain, "_fit", "taken", before=True)
        self._at(chain, "_encode", "encoded")
        self._at(chain, "_commit", "synced")
        self._at(chain, "_move_head", "headed")
        self._at(roost.core._turns, "_end", "ended")
        queue_many, marks = chain.queue_many, self.marks

        def queued(events: Any) -> Any:
            marks.setdefault("queued", time.perf_counter())
            done = queue_many(events)
            if done is not None:  # the first callback: before the turn's task wakes
                done.add_done_callback(lambda _f: marks.setdefault("settled", time.perf_counter()))
            return done

        chain.queue_many = queued

    def _at(self, obj: Any, attr: str, name: str, before: bool = False) -> None:
        fn, marks = getattr(obj, attr), self.marks
        if asyncio.iscoroutinefunction(fn):

            async def timed_async(*a: Any, **k: Any) -> Any:
                try:
                    return await fn(*a, **k)
                finally:
                    marks.setdefault(name, time.perf_counter())

            setattr(obj, attr, timed_async)
            return

        def timed(*a: Any, **k: Any) -> Any:
            if before:
                marks.setdefault(name, time.perf_counter())
            try:
                return fn(*a, **k)
            finally:
                marks.setdefault(name, time.perf_counter())

        setattr(obj, attr, timed)

    def start(self) -> None:
        self.marks.clear()
        self.marks["start"] = time.perf_counter()

    def finish(self) -> None:
        self.marks["returned"] = time.perf_counter()
        self.rows.append(dict(self.marks))

    def report(self) -> None:
        if not self.ok or not self.rows:
            return
        print(f"\nthe turn's end, critical path (ms, {len(self.rows)} turns one at a time)")
        print(f"  {'segment':<52} {'mean':>8} {'p50':>8}")
        for a, b, label in self.SEGMENTS:
            took = [r[b] - r[a] for r in self.rows if a in r and b in r]
            if took:
                mean, mid = statistics.fmean(took) * 1e3, statistics.median(took) * 1e3
                print(f"  {label:<52} {mean:8.3f} {mid:8.3f}")
        late = sum(1 for r in self.rows if r.get("settled", 0.0) > r.get("ended", 0.0))
        print(f"  the batch settled after the end's unit in {late} of {len(self.rows)} turns")


def print_steps(steps: Steps, turns: int, p50: float, floor: list[float]) -> None:
    print(f"\nwhere a turn's time goes (ms per turn over {turns} turns; p50 {p50:.3f} ms)")
    print_table(steps, turns)
    mean, mid = statistics.fmean(floor) * 1e3, statistics.median(floor) * 1e3
    print(f"  {'floor: one appended line + fdatasync, between turns':<52} {mean:8.3f} {mid:8.3f}")
    audit = steps.calls.get("audit batch (durable)") or [0.0]
    print(f"  audit batch p50 / floor p50: {statistics.median(audit) * 1e3 / mid:.1f}x")


def print_table(steps: Steps, turns: int) -> None:
    print(f"  {'step':<52} {'mean':>8} {'p50':>8} {'loop CPU':>9}")
    top = top_cpu = 0.0
    for name in steps.order:
        ms = steps.total.get(name, 0.0) / turns * 1e3
        cpu = steps.cpu.get(name, 0.0) / turns * 1e3
        calls = steps.calls.get(name) or [0.0]
        if name[0] != " " and not name.startswith(("TurnRunner", "handle")):
            top, top_cpu = top + ms, top_cpu + cpu
        print(f"  {name:<52} {ms:8.3f} {statistics.median(calls) * 1e3:8.3f} {cpu:9.3f}")
    whole = steps.total.get("handle (whole)", 0.0) / turns * 1e3
    whole_cpu = steps.cpu.get("handle (whole)", 0.0) / turns * 1e3
    rest = "router, lock, running, rest (whole - steps)"
    print(f"  {rest:<52} {whole - top:8.3f} {'':>8} {whole_cpu - top_cpu:9.3f}")


async def concurrent(roost: Any, steps: Steps, turns: int, clients: int) -> float:
    """The same steps with `clients` turns in flight at once (each in its own chat, as
    `/api/chat` at that many clients without HTTP): turns/s, and where a turn waits;
    returns the loop's CPU ms per turn.
    A step's wall time here includes the other turns' CPU run meanwhile; its loop CPU is
    the CPU of every task that ran during it, so read the CPU of the sequential table."""
    steps.reset()
    each = max(1, turns // clients)

    async def client(c: int) -> None:
        for i in range(each):
            msg = str(5 * 10**6 + c * 10**5 + i)  # a number, as the audit keeps it
            inbound = Inbound("web", "local", f"k{c}", f"together {i}", msg)
            start, began = time.perf_counter(), time.thread_time()
            await roost.core.handle(inbound)
            steps.total["handle (whole)"] += time.perf_counter() - start
            steps.cpu["handle (whole)"] += time.thread_time() - began
            steps.calls["handle (whole)"].append(time.perf_counter() - start)

    writer = getattr(roost.database, "_writer", None)
    jobs, grouped = writer_jobs(writer), getattr(writer, "grouped", 0)
    joined = getattr(roost.database, "joined", 0)
    user = user_cpu()
    began, cpu, loop = time.perf_counter(), time.process_time(), time.thread_time()
    await asyncio.gather(*(client(c) for c in range(clients)))
    took, cpu = time.perf_counter() - began, time.process_time() - cpu
    loop = time.thread_time() - loop
    done = each * clients
    print(
        f"\n{clients} turns at once, {done} turns, no HTTP: {done / took:.0f} turns/s, "
        f"CPU per turn {cpu / done * 1e3:.3f} ms (loop {loop / done * 1e3:.3f}), "
        f"loop busy {loop / took * 100:.0f}% of the time (ms per turn)"
    )
    bound = gil_line(user, user_cpu(), done)
    if bound:
        print(bound)
    if writer is not None:
        print(
            "  roost.db "
            + jobs_line(jobs, writer_jobs(writer), done)
            + grouped_line(writer, grouped, done)
            + f", {(getattr(roost.database, 'joined', 0) - joined) / done:.3f} an inline one"
            " (turns ending in one pass of the loop)"
        )
    print_table(steps, done)
    return loop / done * 1e3


def writer_jobs(writer: Any) -> tuple[int, int]:
    """SQLite writer's counts so far: commits on its thread (its jobs, those that shared
    the commit of the job before them not counted: `bridge.storage.sqlite.group`), and
    writes run inline (each a commit, as `statements_per_turn` counts them); zeros
    without one."""
    if writer is None:
        return (0, 0)
    return (writer._ended - getattr(writer, "grouped", 0), writer.inlined_writes)


def jobs_line(before: tuple[int, int], after: tuple[int, int], turns: int) -> str:
    ended, inline = (a - b for a, b in zip(after, before, strict=True))
    return (
        f"write commits per turn {(ended + inline) / turns:.3f}"
        f" ({inline / turns:.3f} inline, {ended / turns:.3f} on its thread)"
    )


def grouped_line(writer: Any, before: int, turns: int) -> str:
    """Units that shared a commit on the writer's thread (`together`), per turn."""
    grouped = getattr(writer, "grouped", 0) - before
    return f"; {grouped / turns:.3f} units a turn shared a commit on its thread"


async def statements_per_turn(roost: Any, turns: int) -> None:
    """SQL statements per turn on each connection of the `Database` (a count that does not
    move with load): its writer and its reader (the recall index's writes, which the
    indexer's task runs after the reply in batches across turns, are counted by waiting
    for them after the last turn)."""
    counts: dict[str, list[str]] = defaultdict(list)
    database, indexer = roost.database, roost.core._turns._exchanges

    def trace(name: str) -> Any:
        return lambda c: c.set_trace_callback(counts[name].append if name else None)

    writer = getattr(database, "_writer", None)  # SQLite's: its jobs, queued or run inline
    jobs = (writer._queued, writer.inlined_writes) if writer is not None else (0, 0)
    await database.write(trace("roost.db (Database writer)"))
    await database.read(trace("roost.db (Database reader)"))
    try:
        for i in range(turns):
            inbound = Inbound("web", "local", f"c{i % 20}", f"counted {i}", str(3 * 10**6 + i))
            await roost.core.handle(inbound)
        if indexer is not None:
            await indexer.settled()
    finally:
        await database.write(trace(""))
        await database.read(trace(""))
    if writer is not None:  # the two trace jobs are not the turns'
        queued, inline = writer._queued - jobs[0] - 2, writer.inlined_writes - jobs[1]
        print(
            f"write jobs per turn, roost.db (each a commit): {(queued + inline) / turns:g}"
            f" ({queued / turns:g} queued to the writer, {inline / turns:g} run inline)"
        )
    for name, seen in counts.items():
        kinds: dict[str, int] = defaultdict(int)
        for sql in seen:
            kinds[" ".join(sql.split()[:3])[:40]] += 1
        top = ", ".join(f"{k} {n / turns:g}" for k, n in sorted(kinds.items(), key=lambda x: -x[1]))
        print(f"SQL statements per turn, {name}: {len(seen) / turns:g}  ({top})")


async def profiled(roost: Any, turns: int, rows: int = 30, match: str = "") -> None:
    """cProfile over `turns` turns: function calls per turn and the top functions by own time,
    then by cumulative time (callees included), then (`match`, a regular expression) every
    function whose `file:line(name)` it matches, by cumulative time. Its clock is the loop
    thread's CPU time (`time.thread_time`): a wall clock would charge the waits in `epoll`
    and the time the kernel gives other processes on a loaded machine to whatever ran then."""
    prof = cProfile.Profile(time.thread_time)
    prof.enable()
    for i in range(turns):
        inbound = Inbound("web", "local", f"c{i % 20}", f"profiled {i}", str(4 * 10**6 + i))
        await roost.core.handle(inbound)
    prof.disable()
    print(profile_report(prof, turns, rows, match))


def profile_report(prof: cProfile.Profile, turns: int, rows: int = 30, match: str = "") -> str:
    """cProfile's calls per turn, top functions by own then cumulative time (and `match`)."""
    out, lines = io.StringIO(), []
    stats = pstats.Stats(prof, stream=out)
    calls, cpu = stats.total_calls / turns, stats.total_tt / turns * 1e3  # type: ignore[attr-defined]
    lines.append(f"\nprofile: {calls:.0f} function calls per turn, {cpu:.3f} ms CPU (profiled)")
    stats.sort_stats("tottime").print_stats(rows)
    lines += out.getvalue().splitlines()[6:]
    out.seek(0)
    out.truncate()
    stats.sort_stats("cumulative").print_stats(rows)
    lines.append("by cumulative time (the functions' callees included):")
    lines += out.getvalue().splitlines()[6:]
    if match:
        out.seek(0)
        out.truncate()
        stats.sort_stats("cumulative").print_stats(match)
        lines.append(f"matching {match!r} (seconds over {turns} turns):")
        lines += out.getvalue().splitlines()[6:]
    return "\n".join(lines)


async def overhead(
    turns: int,
    breakdown: bool = True,
    profile: bool = False,
    profile_match: str = "",
    budget: int = 0,
    recall: bool = True,
    clients: int = 10,
    inline_writes: str = "on",
    python_gc: bool = False,
) -> tuple[float, float, float, float | None]:
    with tempfile.TemporaryDirectory() as tmp:
        limits = {"ROOST_LIMITS__DAILY_TOKENS": str(budget)} if budget else {}
        if not recall:  # the A/B of the recall index's cost (its writes on the writer)
            limits["ROOST_RECALL__ENABLED"] = "false"
        settings = isolated_settings(Path(tmp), **limits)
        model = EchoModel()
        roost = await build(settings, backend=model)
        set_inline_writes(roost, inline_writes)
        for i in range(min(100, turns)):  # warm: tenant made, caches filled
            warm = Inbound("web", "local", f"c{i % 20}", f"warm {i}", str(10**6 + i))
            await roost.core.handle(warm)
        daemon_collector(python_gc)
        times: list[float] = []
        together: float | None = None  # the loop's CPU per turn, `clients` at once
        cpu, by_thread, switched = time.process_time(), thread_cpu(), thread_switches()
        for i in range(turns):
            inbound = Inbound("web", "local", f"c{i % 20}", f"message {i}", str(i))
            start = time.perf_counter()
            await roost.core.handle(inbound)
            times.append(time.perf_counter() - start)
        cpu = (time.process_time() - cpu) / turns * 1e3
        switches = per_thread_switches(switched, thread_switches(), turns)
        print(f"\nCPU per turn (this process, all threads): {cpu:.3f} ms")
        print(f"  by thread: {per_thread(by_thread, thread_cpu(), turns)}")
        print(f"  context switches per turn by thread (voluntary/involuntary): {switches}")
        await statements_per_turn(roost, min(turns, 200))
        if profile:
            await profiled(roost, turns, match=profile_match)
        if breakdown:
            path = EndPath(roost)
            steps, floor = instrument(roost), Floor(Path(tmp))
            steps.order.append("handle (whole)")
            for i in range(turns):
                inbound = Inbound("web", "local", f"c{i % 20}", f"again {i}", str(2 * 10**6 + i))
                path.start()
                start, began = time.perf_counter(), time.thread_time()
                await roost.core.handle(inbound)
                took = time.perf_counter() - start
                path.finish()
                steps.total["handle (whole)"] += took
                steps.cpu["handle (whole)"] += time.thread_time() - began
                steps.calls["handle (whole)"].append(took)
                floor.once()
            floor.close()
            print_steps(steps, turns, statistics.median(times) * 1e3, floor.times)
            path.report()
            if clients > 1:
                together = await concurrent(roost, steps, turns, clients)
        bare: list[float] = []
        from bridge.types.backend import ChatMessage, ModelRequest

        request = ModelRequest("sys", (ChatMessage("user", "x"),))
        for _ in range(turns):
            start = time.perf_counter()
            async for _event in model.stream(request):
                pass
            bare.append(time.perf_counter() - start)
        await roost.aclose()
    p50, p99 = statistics.median(times) * 1e3, pct(times, 99) * 1e3
    return p50, p99, statistics.median(bare) * 1e3, together


def daemon_collector(python_gc: bool) -> None:
    """The cyclic collector as `roost serve` sets it once ready (start-up frozen, young
    collections every 5,000: `bridge.cli.collector`), unless `python_gc` (the A/B):
    called once the roost is built and warm, so the measured turns pay what a daemon's
    turns pay (Python's default collector traverses the bench's own imports again and
    again: about 3 % of a turn's instructions a daemon does not spend)."""
    if python_gc:
        return
    gc.collect()
    collector.pause()
    collector.resume()


def set_inline_writes(roost: Any, mode: str) -> None:
    """SQLite's short writes on the loop's thread (`on`, the default), every one a job of
    its writer thread (`off`), or inline only while one turn is in flight (`alone`: the
    policy "never under load", put on `core.handle` here): the A/B of one turn's latency
    against turns/s."""
    database = roost.database
    if not hasattr(database, "inline_writes"):
        return  # not SQLite
    database.inline_writes = mode != "off"
    if mode != "alone":
        return
    handle, flight = roost.core.handle, [0]

    async def counted(*a: Any, **k: Any) -> Any:
        flight[0] += 1
        database.inline_writes = flight[0] <= 1
        try:
            return await handle(*a, **k)
        finally:
            flight[0] -= 1
            database.inline_writes = flight[0] <= 1

    roost.core.handle = counted


class ServerMeter:
    """Bench-only routes on a server under load: `GET /bench/cpu` (its process CPU and its
    loop thread's, in seconds so far: the client computes CPU per turn, a figure the
    machine's load moves far less than turns/s) and `POST /bench/profile` (`start`, or
    `stop?turns=N` -> cProfile's report on the loop thread's CPU clock)."""

    def __init__(self, writer: Any = None) -> None:
        self._writer = writer  # SQLite's writer (its jobs counted), or None
        self._prof: cProfile.Profile | None = None
        self._idle = 0.0  # wall seconds the loop spent waiting in its selector
        self._gc = [
            0.0,
            0.0,
        ]  # the cyclic collector's CPU seconds so far (on the thread it ran on), and its start
        gc.callbacks.append(self._collecting)

    def _collecting(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc[1] = time.thread_time()
        else:
            self._gc[0] += time.thread_time() - self._gc[1]

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/bench/cpu", self.cpu)
        app.router.add_post("/bench/profile", self.profile)
        selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
        select = selector.select

        def timed(timeout: float | None = None) -> Any:
            start = time.perf_counter()
            try:
                return select(timeout)
            finally:
                self._idle += time.perf_counter() - start

        selector.select = timed

    async def cpu(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "process": time.process_time(),
                "system": os.times().system,  # of which in the kernel (sockets, disk)
                "loop": time.thread_time(),
                "idle": self._idle,
                "gc": self._gc[0],
                "wall": time.perf_counter(),
                "write_jobs": float(sum(writer_jobs(self._writer))),
            }
        )

    async def profile(self, request: web.Request) -> web.Response:
        if request.query.get("do") == "start":
            self._prof = cProfile.Profile(time.thread_time)
            self._prof.enable()
            return web.json_response({"ok": True})
        assert self._prof is not None
        self._prof.disable()
        turns = int(request.query.get("turns", "1"))
        text = profile_report(self._prof, max(1, turns), rows=int(request.query.get("rows", "40")))
        self._prof = None
        return web.json_response({"report": text})


def serve_echo(port_q: Any) -> None:
    async def main() -> None:
        async def echo(request: web.Request) -> web.Response:
            body = await request.json()
            return web.json_response({"reply": f"echo: {body['text']}", "kind": "answer"})

        app = web.Application()
        app.router.add_post("/api/chat", echo)
        ServerMeter().mount(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        if port_q is None:  # under callgrind (`http_instructions`): the port on stdout
            print(port, flush=True)
        else:
            port_q.put(port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_roost(
    port_q: Any,
    home: str,
    model_url: str | None,
    inline_writes: str = "on",
    freeze: bool = True,
    recall: bool = True,
) -> None:
    async def main() -> None:
        from bridge.channels.web.channel import WebChannel

        extra = {"ROOST_WEB__TOKEN": TOKEN}
        if not recall:  # the A/B of what the recall index costs a turn
            extra["ROOST_RECALL__ENABLED"] = "false"
        if model_url:
            extra |= {"ROOST_LLM__BASE_URL": model_url, "ROOST_LLM__MODEL": "m"}
        settings = isolated_settings(Path(home), **extra)
        roost = await build(settings, backend=None if model_url else EchoModel())
        set_inline_writes(roost, inline_writes)
        daemon_collector(python_gc=not freeze)  # as after `serve`'s ready line
        channel = WebChannel(
            roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0, limits=LIMITS
        )
        ServerMeter(getattr(roost.database, "_writer", None)).mount(channel.app)
        await channel.start()
        if port_q is None:  # under callgrind (`http_instructions`): the port on stdout
            print(channel.port, flush=True)
        else:
            port_q.put(channel.port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_channel(port_q: Any) -> None:
    """The web channel over a `handle` that answers at once (no core): what HTTP and the
    channel's own plumbing cost a turn, next to the bare echo."""

    async def main() -> None:
        from bridge.channels.web.channel import WebChannel
        from bridge.types.messages import Final

        async def handle(inbound: Inbound, on_delta: Any, on_progress: Any) -> Final:
            return Final(f"echo: {inbound.text}")

        channel = WebChannel(handle, list, TOKEN, "127.0.0.1", 0, limits=LIMITS)
        ServerMeter().mount(channel.app)
        await channel.start()
        if port_q is None:  # under callgrind (`http_instructions`): the port on stdout
            print(channel.port, flush=True)
        else:
            port_q.put(channel.port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_fake_model(port_q: Any) -> None:
    async def main() -> None:
        from tests.fakes.fake_openai import FakeOpenAI

        fake = FakeOpenAI()
        await fake.start()
        port_q.put(fake.base_url)
        await asyncio.Event().wait()

    asyncio.run(main())


class Point:
    """One load point: turns/s, and the server's CPU per turn (its process, its loop)."""

    def __init__(self, rate: float, turns: int, cpu: dict[str, float]) -> None:
        self.rate, self.turns = rate, max(1, turns)
        self.process_ms = cpu["process"] / self.turns * 1e3
        self.loop_ms = cpu["loop"] / self.turns * 1e3
        # of the loop's wall time: running Python (its CPU), waiting in epoll for work,
        # and the rest: blocked in a system call off the CPU (a disk sync, the GIL)
        self.busy = cpu["loop"] / cpu["wall"]
        self.idle = cpu["idle"] / cpu["wall"]
        self.blocked = max(0.0, 1.0 - self.busy - self.idle)
        self.gc_ms = cpu["gc"] / self.turns * 1e3
        self.client_ms = cpu["client"] / self.turns * 1e3  # the load generator's, this process
        self.system_ms = cpu["system"] / self.turns * 1e3
        self.write_jobs = cpu.get("write_jobs", 0.0) / self.turns  # roost.db write jobs


class Poster:
    """One keep-alive connection posting chat turns as plain HTTP/1.1 bytes: the load
    generator shares the machine's 2 cores with the server it measures, and aiohttp's
    client took 0.4 ms of CPU per turn there (more than a bare echo server's 0.06)."""

    def __init__(self, port: int, path: str = "/api/chat") -> None:
        self._port = port
        self._head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        ).encode()
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, payload: dict[str, str]) -> dict[str, Any]:
        if self._conn is None:
            self._conn = await asyncio.open_connection("127.0.0.1", self._port)
        reader, writer = self._conn
        body = json.dumps(payload).encode()
        writer.write(self._head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        head = await reader.readuntil(b"\r\n\r\n")
        status, *fields = head.decode("latin-1").split("\r\n")
        headers = dict(f.lower().split(": ", 1) for f in fields if f)
        assert status.split(" ")[1] == "200", head
        if "content-length" in headers:
            return dict(json.loads(await reader.readexactly(int(headers["content-length"]))))
        assert headers.get("transfer-encoding") == "chunked", head  # an event stream
        events = b""
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            events += (await reader.readexactly(size + 2))[:-2]
        await reader.readexactly(2)  # the last chunk's empty trailer
        final = events.rpartition(b"event: final\ndata: ")[2]
        answer = dict(json.loads(final))
        return {"reply": answer.pop("text"), **answer}

    async def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            await self._conn[1].wait_closed()


async def load(
    port: int, clients: int, seconds: float, profile: bool = False, path: str = "/api/chat"
) -> Point:
    """`clients` clients posting turns to `path` for `seconds` (`Poster`); with `profile`,
    the server's cProfile report of those turns is printed."""
    done = 0
    stop_at = time.perf_counter() + seconds
    conn = aiohttp.TCPConnector(limit=2)  # the bench's own routes
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}", connector=conn) as http:

        async def server_cpu() -> dict[str, float]:
            async with http.get("/bench/cpu") as r:
                return dict(await r.json())

        async def client(i: int) -> None:
            nonlocal done
            n, poster = 0, Poster(port, path)
            try:
                while time.perf_counter() < stop_at:
                    body = await poster.post({"text": f"hello {n}", "chat": f"bench{i}"})
                    assert body["reply"].startswith("echo:"), body
                    done += 1
                    n += 1
            finally:
                await poster.close()

        if profile:
            await http.post("/bench/profile", params={"do": "start"})
        before = await server_cpu()
        start, mine = time.perf_counter(), time.process_time()
        await asyncio.gather(*(client(i) for i in range(clients)))
        rate = done / (time.perf_counter() - start)
        mine = time.process_time() - mine
        after = await server_cpu()
        if profile:
            async with http.post("/bench/profile", params={"turns": str(done)}) as r:
                print(f"\nserver profile, {clients} clients, {done} turns (loop thread CPU):")
                print((await r.json())["report"])
        return Point(rate, done, {k: after[k] - before[k] for k in after} | {"client": mine})


def start(target: Any, *args: Any) -> tuple[Any, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=target, args=(q, *args), daemon=True)
    proc.start()
    return proc, q.get(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true", help="300 turns, 0.5 s per point")
    parser.add_argument("--no-http", action="store_true", help="core.handle only")
    parser.add_argument(
        "--budget", type=int, default=0, help="a daily token budget for every tenant ([limits])"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile the turns (top functions)"
    )
    parser.add_argument(
        "--profile-match",
        default="",
        metavar="REGEX",
        help="with --profile: also every function whose file:line(name) matches",
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=10,
        help="the step table again with this many turns at once, in-process (1: not)",
    )
    parser.add_argument(
        "--recall",
        choices=("on", "off"),
        default="on",
        help="in process and in the roost servers over HTTP: every exchange indexed"
        " for recall (on, as roost runs) or not (off: the A/B of what the index costs a turn)",
    )
    parser.add_argument(
        "--inline-writes",
        choices=("on", "off", "alone"),
        default="on",
        help="SQLite's short writes on the loop's thread (on, the default), on its writer"
        " (off), or inline only while one turn is in flight (alone)",
    )
    parser.add_argument(
        "--http-only", action="store_true", help="the POST /api/chat table only (no core.handle)"
    )
    parser.add_argument(
        "--points",
        default="1,10,100",
        help="the client counts of the POST /api/chat table (comma-separated)",
    )
    parser.add_argument(
        "--http-profile",
        type=int,
        default=0,
        metavar="CLIENTS",
        help="cProfile the zero-latency server's loop during one more load point at CLIENTS",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="the roost and channel-only clients post to /api/chat/stream (the page's way)",
    )
    parser.add_argument(
        "--python-gc",
        action="store_true",
        help="the in-process roost and the roost servers keep Python's default collector,"
        " not the one `roost serve` sets once ready (an A/B)",
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="instructions per turn under valgrind's callgrind (one at a time, --clients at"
        " once), nothing else; with --http-only: of a roost server answering POST /api/chat",
    )
    parser.add_argument("--under-callgrind", default="", help=argparse.SUPPRESS)
    parser.add_argument("--serve-under-callgrind", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.turns, args.seconds = 300, 0.5
    if args.under_callgrind:
        asyncio.run(counted_turns(args.turns, args.clients, args.recall == "on", args.python_gc))
        return
    if args.serve_under_callgrind == "channel":
        serve_channel(None)
        return
    if args.serve_under_callgrind == "echo":
        serve_echo(None)
        return
    if args.serve_under_callgrind:
        recall = args.recall == "on"
        home, inline = args.serve_under_callgrind, args.inline_writes
        serve_roost(None, home, None, inline, not args.python_gc, recall)
        return
    if args.callgrind and args.http_only:
        http_instructions(
            args.turns, args.clients, args.inline_writes, args.python_gc, args.recall == "on"
        )
        return
    if args.callgrind:
        instructions(args.turns, args.clients, args.recall == "on", args.python_gc)
        return
    print(speed_line())
    together = None if args.http_only else in_process(args)
    if not args.no_http:
        over_http(args, [int(c) for c in args.points.split(",")], together)


def instructions(turns: int, clients: int, recall: bool, python_gc: bool = False) -> None:
    """Instructions per turn, every thread of the process, under callgrind: this script
    again in a child under valgrind (`--instr-atstart=no`), which counts only while it
    turns the instrumentation on around the measured turns (`counted_turns`) and dumps
    after each part; the dumps' totals over the turns. The same tree gives the same count
    within about 0.5 % at any load (docs/scaling.md, session 15), so two trees are compared
    by it where the wall and CPU figures move more with the host than with a change."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={out}", sys.executable, "-m", "bench.turn",
            "--under-callgrind", str(out), "--turns", str(turns), "--clients", str(clients),
            "--recall", "on" if recall else "off", *(["--python-gc"] if python_gc else []),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0"}  # both trees' runs start alike
        done = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
        print(done.stdout.strip())
        for n, (label, count) in enumerate(_parts(turns, clients), 1):
            dump = Path(f"{out}.{n}").read_text()
            found = re.search(r"^totals: (\d+)", dump, re.M)
            assert found is not None, "no totals in the callgrind dump"
            per = int(found.group(1)) / count
            print(f"instructions per turn (callgrind, every thread), {label}: {per / 1e6:.3f} M")


def http_instructions(
    turns: int, clients: int, inline_writes: str, python_gc: bool, recall: bool
) -> None:
    """`server_instructions` of the roost server (zero-latency model), of the web channel
    alone (over a `handle` that answers at once) and of the bare aiohttp echo."""
    for kind in ("roost", "channel", "echo"):
        server_instructions(kind, turns, clients, inline_writes, python_gc, recall)


def server_instructions(
    kind: str, turns: int, clients: int, inline_writes: str, python_gc: bool, recall: bool
) -> None:
    """Instructions per turn of a roost server (zero-latency model) answering `POST
    /api/chat`, every thread of its process, under callgrind: the server runs under
    valgrind (`--instr-atstart=no`), the clients here post `turns` turns one at a time,
    then `clients` at once (`Poster`, plain HTTP/1.1 over TCP), each part counted alone
    (`callgrind_control` zeroes, instruments and dumps the server around it, after warm
    turns): what HTTP, the web channel and the turn cost the server, a figure the host's
    load does not move (the clients' own instructions are not in it)."""
    with tempfile.TemporaryDirectory() as tmp:
        out, home = Path(tmp) / "cg.out", Path(tmp) / "home"
        home.mkdir()
        cmd = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={out}", sys.executable, "-m", "bench.turn",
            "--serve-under-callgrind", str(home) if kind == "roost" else kind,
            "--inline-writes", inline_writes, "--recall", "on" if recall else "off",
            *(["--python-gc"] if python_gc else []),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        server = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert server.stdout is not None
            port = int(server.stdout.readline())

            def control(*command: str) -> None:
                argv = ["callgrind_control", *command, str(server.pid)]
                subprocess.run(argv, check=True, capture_output=True)

            asyncio.run(posted(port, 10, min(200, turns), "warm"))
            for n, (label, count) in enumerate(_parts(turns, clients), 1):
                control("--zero")
                control("--instr=on")
                asyncio.run(posted(port, 1 if n == 1 else clients, count, label))
                control("--instr=off")
                control("--dump")
                dump = Path(f"{out}.{n}").read_text()
                found = re.search(r"^totals: (\d+)", dump, re.M)
                assert found is not None, "no totals in the callgrind dump"
                per = int(found.group(1)) / count
                print(
                    f"instructions per turn of the {kind} server (callgrind, every thread,"
                    f" POST /api/chat), {label}: {per / 1e6:.3f} M"
                )
        finally:
            server.terminate()
            server.wait(30)


async def posted(port: int, clients: int, turns: int, label: str) -> None:
    """`turns` turns posted to `port` by `clients` clients at once (`Poster`), each its own
    chat."""
    each = max(1, turns // clients)

    async def client(i: int) -> None:
        poster = Poster(port)
        try:
            for n in range(each):
                body = await poster.post({"text": f"{label} {n}", "chat": f"cg{i}"})
                assert body["reply"].startswith("echo:"), body
        finally:
            await poster.close()

    await asyncio.gather(*(client(i) for i in range(clients)))


def _parts(turns: int, clients: int) -> list[tuple[str, int]]:
    """The parts `counted_turns` measures: (label, turns)."""
    parts = [("one at a time", turns)]
    if clients > 1:
        parts.append((f"{clients} at once", max(1, turns // clients) * clients))
    return parts


def _callgrind(*command: str) -> None:
    """A `callgrind_control` command to the valgrind this process runs under."""
    subprocess.run(
        ["callgrind_control", *command, str(os.getpid())], check=True, capture_output=True
    )


async def counted_turns(turns: int, clients: int, recall: bool, python_gc: bool) -> None:
    """Inside callgrind (`instructions`): warm turns uncounted, then each part of `_parts`
    counted alone (zeroed, instrumented, dumped)."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = {} if recall else {"ROOST_RECALL__ENABLED": "false"}
        roost = await build(isolated_settings(Path(tmp), **extra), backend=EchoModel())
        for i in range(min(200, turns)):
            warm = Inbound("web", "local", f"c{i % 20}", f"warm {i}", str(10**6 + i))
            await roost.core.handle(warm)
        daemon_collector(python_gc)

        async def client(c: int, each: int, alone: bool) -> None:
            for i in range(each):  # alone: the chats in turn, as the sequential table
                chat, msg = (f"c{i % 20}" if alone else f"k{c}"), str(5 * 10**6 + c * 10**5 + i)
                await roost.core.handle(Inbound("web", "local", chat, f"counted {i}", msg))

        for n, (label, count) in enumerate(_parts(turns, clients)):
            at_once = 1 if n == 0 else clients
            _callgrind("--zero")
            _callgrind("--instr=on")
            began = time.perf_counter()
            await asyncio.gather(*(client(c, count // at_once, n == 0) for c in range(at_once)))
            took = time.perf_counter() - began
            _callgrind("--instr=off")
            _callgrind("--dump")
            print(f"under callgrind, {label}: {count} turns, {count / took:.0f} turns/s")
        await roost.aclose()


def in_process(args: argparse.Namespace) -> float | None:
    """The in-process part; the loop's CPU ms per turn with `--clients` turns at once."""
    inline = args.inline_writes
    p50, p99, bare, together = asyncio.run(
        overhead(
            args.turns,
            profile=args.profile,
            profile_match=args.profile_match,
            budget=args.budget,
            recall=args.recall == "on",
            clients=args.clients,
            inline_writes=inline,
            python_gc=args.python_gc,
        )
    )
    print(f"core.handle, zero-latency model ({args.turns} turns)")
    print(f"  p50 {p50:.3f} ms   p99 {p99:.3f} ms   (bare model call p50 {bare:.3f} ms)")
    print(f"  roost's own overhead p50 ≈ {p50 - bare:.3f} ms (aim < 1 ms)")
    return together


def over_http(args: argparse.Namespace, points: list[int], together: float | None) -> None:
    """turns/s of `POST /api/chat` next to a bare aiohttp echo, and each server's CPU per
    turn (its process; its loop thread): the loop's CPU per turn here minus the in-process
    `turns at once` figure is what HTTP and the web channel add to a turn."""
    inline = args.inline_writes
    path = "/api/chat/stream" if args.stream else "/api/chat"  # the echo: /api/chat
    with tempfile.TemporaryDirectory() as tmp1, tempfile.TemporaryDirectory() as tmp2:
        procs = []
        echo_proc, echo_port = start(serve_echo)
        chan_proc, chan_port = start(serve_channel)
        freeze, recall = not args.python_gc, args.recall == "on"
        roost_proc, roost_port = start(serve_roost, tmp1, None, inline, freeze, recall)
        model_proc, model_url = start(serve_fake_model)
        http_proc, http_port = start(serve_roost, tmp2, model_url, inline, freeze, recall)
        procs += [echo_proc, chan_proc, roost_proc, model_proc, http_proc]
        try:
            for port in (roost_port, http_port):  # warm: tenant made, caches filled
                asyncio.run(load(port, 10, min(0.5, args.seconds), path=path))
            print(
                f"\nPOST {path} turns/s ({args.seconds:g} s per point; servers in own processes;"
                " CPU: ms per turn of the server's process / of its loop thread; the roost"
                " servers' collector: "
                + ("Python's default)" if args.python_gc else "as `roost serve` sets it)")
            )
            print(
                f"{'clients':>8} {'bare echo':>10} {'CPU':>6} {'channel only':>13} {'CPU':>6}"
                f" {'roost+0-lat':>12} {'ratio':>6} {'CPU':>6} {'loop':>6}"
                f" {'roost+fake HTTP model':>22} {'CPU':>6}"
            )
            at: dict[int, float] = {}  # clients -> roost+0-lat's loop CPU ms per turn
            for clients in points:
                echo = asyncio.run(load(echo_port, clients, args.seconds))
                chan = asyncio.run(load(chan_port, clients, args.seconds, path=path))
                zero = asyncio.run(load(roost_port, clients, args.seconds, path=path))
                fake = asyncio.run(load(http_port, clients, args.seconds, path=path))
                print(
                    f"{clients:>8} {echo.rate:>10.0f} {echo.process_ms:>6.3f} {chan.rate:>13.0f}"
                    f" {chan.process_ms:>6.3f} {zero.rate:>12.0f} {echo.rate / zero.rate:>5.1f}x"
                    f" {zero.process_ms:>6.3f} {zero.loop_ms:>6.3f}"
                    f" {fake.rate:>22.0f} {fake.process_ms:>6.3f}"
                )
                at[clients] = zero.loop_ms
            if together is not None and args.clients in points:
                print(
                    f"roost+0-lat's loop CPU per turn at {args.clients} clients over HTTP"
                    f" {at[args.clients]:.3f} ms, in process {together:.3f} ms:"
                    f" HTTP and the web channel add {at[args.clients] - together:.3f} ms"
                )
            print(
                f"roost+0-lat at {points[-1]} clients: {zero.system_ms:.3f} ms of its CPU per"
                f" turn in the kernel (channel only {chan.system_ms:.3f}); its loop"
                f" {zero.busy:.0%} on the CPU, "
                f"{zero.idle:.0%} waiting in epoll, {zero.blocked:.0%} blocked off the CPU; "
                f"cyclic GC {zero.gc_ms:.3f} ms per turn (channel only {chan.gc_ms:.3f}); "
                f"the clients' own CPU per turn {zero.client_ms:.3f} ms (the same 2 cores); "
                f"roost.db write commits per turn {zero.write_jobs:.3f}"
            )
            if args.http_profile:
                print("\nthe web channel only (no core):")
                asyncio.run(load(chan_port, args.http_profile, args.seconds, True, path))
                print("\nroost, zero-latency model:")
                asyncio.run(load(roost_port, args.http_profile, args.seconds, True, path))
        finally:
            for proc in procs:
                proc.terminate()
                proc.join(5)


if __name__ == "__main__":
    main()

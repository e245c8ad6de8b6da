"""Idle daemon: the CPU `roost serve` uses while nobody talks to it, as % of one core.

Three processes are measured in one run, each left to settle and then read
from /proc over `--seconds` of wall time, `--runs` times (median and max):

- floor: a bare aiohttp server on loopback, idle (what an asyncio web
  process costs doing nothing);
- web only: `roost serve` as `make run` starts it (offline model, web page on
  a loopback port, no Telegram);
- web + Telegram: the same with Telegram polling the fake Bot API
  (tests/telegram/fake_bot_api.py, in this process) that answers `getUpdates`
  AT ONCE with no updates (`max_poll_s=0`), as a proxy or a Bot API that
  ignores the long-poll timeout does; the getUpdates calls per second are
  printed beside the CPU (a client that backs off on empty answers polls a
  few times a second at most).

CPU = utime + stime of the process and of every living descendant (sandbox
helpers, decoders), plus what the daemon reaped (cutime + cstime), from
/proc/PID/stat, in clock ticks. `--profile` also writes a cProfile of the
Telegram case's daemon (`python -m cProfile`) and prints its top entries.
Figures only, no thresholds.

Run: .venv/bin/python -m bench.idle [--seconds 10] [--runs 3] [--settle 3] [--profile] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.telegram.fake_bot_api import FakeBotAPI

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
LIVE_S = 300.0  # a safety net against a hang, never a measurement
FLOOR = """
import asyncio, sys
from aiohttp import web
async def main():
    runner = web.AppRunner(web.Application())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print("roost: model floor", flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def _ticks(pid: int) -> tuple[int, int]:
    """(own utime + stime, reaped cutime + cstime) of one process, in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return utime + stime, cutime + cstime


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = (task / "children").read_text().split()
                out += [int(k) for k in kids]
                todo += [int(k) for k in kids]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def cpu_seconds(pid: int) -> float:
    """CPU seconds of `pid`, its living descendants and the children it reaped."""
    own, reaped = _ticks(pid)
    total = own + reaped
    for kid in _descendants(pid):
        try:
            total += _ticks(kid)[0]
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone between the listing and the read: its time is in `reaped`
    return total / TICK


async def start(cmd: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start a process and read its stdout up to the "roost: model" line (it is ready)."""
    proc = await asyncio.create_subprocess_exec(
        *cmd, env=env, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    assert proc.stdout is not None
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), LIVE_S)).decode()
        if not line:
            raise SystemExit(f"{cmd[-1]} exited before it was ready")
        if line.startswith("roost: model"):
            return proc


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def measure(
    cmd: list[str], env: dict[str, str], seconds: float, fake: FakeBotAPI | None, settle: float
) -> tuple[float, float]:
    """% of a core over `seconds` of idle wall time after `settle` seconds (start-up work is
    not idle work), and getUpdates calls per second."""
    proc = await start(cmd, env)
    assert proc.stdout is not None
    drain = asyncio.create_task(_drain(proc.stdout))
    try:
        await asyncio.sleep(settle)
        polls = len(fake.calls_of("getUpdates")) if fake else 0
        cpu, wall = cpu_seconds(proc.pid), time.monotonic()
        await asyncio.sleep(seconds)
        cpu, wall = cpu_seconds(proc.pid) - cpu, time.monotonic() - wall
        polls = (len(fake.calls_of("getUpdates")) - polls) if fake else 0
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), LIVE_S)
        await drain
    return 100 * cpu / wall, polls / wall


def roost_env(home: Path, telegram_url: str | None) -> dict[str, str]:
    """`make run`'s daemon in a fresh home: offline model, web on a free loopback port."""
    home.mkdir(parents=True)
    config = home / "roost.toml"
    config.write_text("[tenants.alice]\ntelegram_ids = [111111]\n" if telegram_url else "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env |= {
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": str(config),
        "ROOST_WEB__PORT": "0",
        "ROOST_LLM__PROVIDER": "offline",
    }
    if telegram_url:
        env |= {"ROOST_TELEGRAM__TOKEN": TOKEN, "ROOST_TELEGRAM__API_BASE_URL": telegram_url}
    return env


def _line(label: str, rows: list[tuple[float, float]], floor: float | None, polls: bool) -> str:
    cpu = [r[0] for r in rows]
    med = statistics.median(cpu)
    text = f"{label:<30} {med:7.2f} % p50  {max(cpu):7.2f} % max"
    text += f"  ({med / floor:6.1f}x floor)" if floor else " " * 18
    if polls:
        text += f"  getUpdates {statistics.median(r[1] for r in rows):8.1f}/s"
    return text


async def main(seconds: float, runs: int, settle: float, profile: bool) -> None:
    serve = [sys.executable, "-m", "bridge.cli.main", "serve"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    floor: list[tuple[float, float]] = []
    web: list[tuple[float, float]] = []
    tele: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeBotAPI(TOKEN, max_poll_s=0) as fake:
            for n in range(runs):  # interleaved, so a change of the machine's load hits all
                floor.append(
                    await measure([sys.executable, "-c", FLOOR], base, seconds, None, settle)
                )
                web.append(
                    await measure(serve, roost_env(Path(tmp, f"w{n}"), None), seconds, None, settle)
                )
                env = roost_env(Path(tmp, f"t{n}"), fake.base_url)
                tele.append(await measure(serve, env, seconds, fake, settle))
            stats = None
            if profile:  # the daemon writes the profile when SIGTERM ends it
                out = Path(tmp, "idle.prof")
                cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "bridge.cli.main"]
                env = roost_env(Path(tmp, "p"), fake.base_url)
                await measure([*cmd, "serve"], env, seconds, fake, settle)
                stats = pstats.Stats(str(out))
    load = os.getloadavg()
    print(f"idle CPU over {seconds:g} s of wall time, {runs} run(s) each, % of one core")
    print(f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores)")
    # the floor is often 0 ticks: ratios are to at least one tick over the interval
    low = max(statistics.median(r[0] for r in floor), 100 / TICK / seconds)
    print(_line("floor: bare aiohttp server", floor, None, False))
    print(_line("roost serve, web only", web, low, False))
    print(_line("roost serve, web + Telegram*", tele, low, True))
    print("  * the fake Bot API answers every getUpdates at once, with no updates")
    per_poll = [r[0] * 10 / r[1] for r in tele if r[1]]  # % of a core / polls per s, in ms
    if per_poll:
        print(f"  daemon CPU per getUpdates round trip: {statistics.median(per_poll):.2f} ms")
    if stats is not None:
        print(f"\ncProfile of the web + Telegram daemon, start-up and {seconds:g} s idle;")
        print("the polling path (Telegram, HTTP client, roost's channel), by cumulative time:")
        stats.sort_stats("cumulative").print_stats(r"telegram|httpx|httpcore|bridge/channels", 25)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="wall time measured per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--settle", type=float, default=3.0, help="seconds after start-up, unmeasured")
    ap.add_argument("--profile", action="store_true", help="cProfile of the Telegram case")
    ap.add_argument("--quick", action="store_true", help="1 s, one run (CI: it still runs)")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.runs, args.settle = 1.0, 1, 0.5
    asyncio.run(main(args.seconds, args.runs, args.settle, args.profile))

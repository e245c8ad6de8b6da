"""Start-up benchmark: how long `roost` takes before it is of use, next to its floors.

Times, in one run, with a fresh home and an empty config file:
- the floors: `python -I -c pass` (the interpreter alone) and
  `python -c "import bridge"` (the package, nothing of it used);
- `roost --help`;
- `roost send /help` (a command through the full pipeline: settings,
  database, audit chain, core), without a model and with one configured
  (an OpenAI-compatible URL nobody listens on: a command never calls it);
- `roost send hello` answered by a fake OpenAI-compatible server
  (tests/fakes/fake_openai.py, in this process): one real turn;
- `roost doctor` without a model (no server to ask: no HTTP client) and with
  the fake model (its checks ask it), and `roost pair local` (an operator
  command: settings, database, audit, no roost built);
- `roost mcp --tenant local` (the stdio MCP server) from the start to its answer to
  `tools/list` (after `initialize`), then stdin closed: the CPU of the whole process;
- `roost chat` under a pseudo-terminal, from the start to the moment the
  prompt `you>` is on the screen (time-to-prompt), then Ctrl-D;
- `roost serve` from the start to its ready line ("roost: model ..."), then
  SIGTERM; its CPU is the daemon's own at that moment (/proc, clock ticks), so
  the sandbox processes it starts are not in it; again with a Telegram token
  set and a Bot API nobody listens on (the channel made and its first attempt
  failed: the ready line does not wait for Telegram);
- the daemon's first message, given at its ready line and 0.5 s after it, and
  its fourth (`FIRST_TURNS`: `serve()` in a child of its own with the offline
  model and a channel that does nothing, each message given to `core.handle`):
  the wall time of the turn, and the CPU of the event loop's thread over the
  turn and the 0.2 s after it, where the recall indexing of the message runs
  (what the loop is held for; at the ready line, also what the daemon does
  then: the spare sandbox helper's start, the screens' tables).
Each row is run `--runs` times after one warm-up round; the rounds alternate
the rows (one of each per round), so a change of the machine's load touches
every row alike. Printed: min and median wall time, min and median CPU time
(user + system of the child, which a busy machine inflates less), and the
median CPU as a multiple of the interpreter floor measured in the same run,
with the machine's load. The children write byte code and roost's start-up
caches (`PYTHONDONTWRITEBYTECODE` is dropped for them, as `make test` drops it):
the figures are a steady state, not a first start. A second table lists the
heaviest imports of `roost send /help`, `roost chat` and `roost serve`
(CPU of each top-level import with what it imported: `IMPORT_TIMER`).

Run: .venv/bin/python -m bench.startup [--runs 7] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
ROOST = [PY, "-m", "bridge.cli.main"]
PROMPT = b"you>"
READY = b"roost: model"
API_KEY = "sk-bench-000000000000000000"
HANG_S = 120.0  # a safety net against a hung child, never a measure


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, cpu s) of one command run to its end; its output is discarded."""
    cpu0, t0 = child_cpu(), time.perf_counter()
    done = subprocess.run(
        argv,
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=HANG_S,
        check=False,
    )
    wall, cpu = time.perf_counter() - t0, child_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[3:]} exited {done.returncode}: {done.stderr[-500:]!r}")
    return wall, cpu


def chat_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s to the prompt, cpu s of the whole session) of `roost chat` on a pty."""
    waited, cpu, _ = chat_session(argv, env)
    return waited, cpu


def chat_session(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """`chat_once`, and what the terminal showed until the prompt."""
    master, slave = os.openpty()
    cpu0, t0 = child_cpu(), time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env | {"TERM": "xterm", "COLUMNS": "100", "LINES": "40"},
        cwd=env["PYTHONPATH"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen, waited = b"", None
    try:
        deadline = t0 + HANG_S
        while waited is None and time.perf_counter() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
            if b"\x1b[6n" in data:  # answer prompt_toolkit's cursor position request
                os.write(master, b"\x1b[1;1R")
            if PROMPT in seen:
                waited = time.perf_counter() - t0
        if waited is None:
            raise RuntimeError(f"roost chat never showed its prompt: {seen[-500:]!r}")
        os.write(master, b"\x04")  # Ctrl-D: leave
        _drain_until_exit(master, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        os.close(master)
    return waited, child_cpu() - cpu0, seen


def _drain_until_exit(master: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.perf_counter() + HANG_S
    while proc.poll() is None and time.perf_counter() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            with contextlib.suppress(OSError):
                os.read(master, 65536)
    proc.wait(timeout=HANG_S)


MCP_HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
MCP_LIST = [
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]


def mcp_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s to the `tools/list` answer, cpu s of the whole run) of the stdio MCP server;
    each answer is read before stdin closes (a request in flight at EOF may be dropped)."""
    cpu0, t0 = child_cpu(), time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for said in ([MCP_HELLO], MCP_LIST):
            proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in said))
            proc.stdin.flush()
            if not proc.stdout.readline():
                raise RuntimeError(f"roost mcp exited before it answered ({proc.wait()})")
        wall = time.perf_counter() - t0
        proc.stdin.close()
        proc.stdout.read()
        if proc.wait(timeout=HANG_S) != 0:
            raise RuntimeError(f"roost mcp exited {proc.returncode}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return wall, child_cpu() - cpu0


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, cpu s of the daemon) from the start of `roost serve` to its ready line."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # the ready line comes within HANG_S, or wait() below says so
            if line.startswith(READY):
                break
        else:
            raise RuntimeError(f"roost serve exited before it was ready ({proc.wait()})")
        wall, cpu = time.perf_counter() - t0, process_cpu(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.stdout.read()
        if proc.wait(timeout=HANG_S) != 0:
            raise RuntimeError(f"roost serve exited {proc.returncode} on SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return wall, cpu


# `python -c FIRST_TURNS N PAUSE` serves a home with the offline model and a channel that
# does nothing; PAUSE seconds after its ready line, it gives `core.handle` N messages one
# after the other, each
# followed by 0.2 s for its recall indexing (written after LINGER_S, 0.05 s), and writes
# "FIRST wall cpu" of the Nth: the turn's wall seconds, the loop thread's CPU seconds
# over the turn and the pause (`time.thread_time`). Then SIGTERM: a clean stop.
FIRST_TURNS = """
import asyncio, os, signal, sys, time
from bridge.app.serve import CHANNELS, ChannelRow, Launched, serve
from bridge.core.config import load_settings
from bridge.types.messages import Inbound

class Quiet:
    async def start(self): return None
    async def stop(self): return None

async def main(n, pause):
    ready, roosts = asyncio.Event(), []
    def factory(settings, roost, made):
        roosts.append(roost)
        return Launched(Quiet(), lambda: "quiet")
    row = ChannelRow("quiet", lambda settings: True, factory)
    settings = load_settings(web={"enabled": False}, llm={"provider": "offline"})
    task = asyncio.create_task(serve(settings, ready=lambda port: ready.set(),
                                     channels=(*CHANNELS, row)))
    await ready.wait()
    await asyncio.sleep(pause)
    wall = cpu = 0.0
    for i in range(1, n + 1):
        message = Inbound("web", "local", "bench", f"hello {i}: what is on today?", str(i))
        t0, c0 = time.perf_counter(), time.thread_time()
        await roosts[0].core.handle(message)
        wall = time.perf_counter() - t0
        await asyncio.sleep(0.2)
        cpu = time.thread_time() - c0
    print(f"FIRST {wall} {cpu}", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await task == 0

asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
"""


def turn_once(n: int, pause: float, env: dict[str, str]) -> tuple[float, float]:
    """(wall s of the turn, loop CPU s with its indexing) of the daemon's `n`th message,
    the first given `pause` seconds after the ready line."""
    done = subprocess.run(
        [PY, "-c", FIRST_TURNS, str(n), str(pause)],
        env=env,
        cwd=env["PYTHONPATH"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("FIRST ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the first-turn probe exited {done.returncode}: {done.stderr[-500:]}")
    wall, cpu = map(float, lines[0].split()[1:])
    return wall, cpu


Measure = Callable[[], tuple[float, float]]
Figures = tuple[float, float, float, float]  # wall min, wall median, cpu min, cpu median


def alternating(rows: list[tuple[str, Measure]], runs: int, warm: bool) -> list[Figures]:
    """Each row `runs` times, one of each per round (after a warm-up round)."""
    if warm:
        for _, measure in rows:
            measure()  # byte code and start-up caches, page cache
    samples: list[list[tuple[float, float]]] = [[] for _ in rows]
    for _ in range(runs):
        for i, (_, measure) in enumerate(rows):
            samples[i].append(measure())
    return [
        (
            min(w for w, _ in s),
            statistics.median(w for w, _ in s),
            min(c for _, c in s),
            statistics.median(c for _, c in s),
        )
        for s in samples
    ]


# `python -c IMPORT_TIMER ARGS` runs `roost ARGS` timing each import in CPU (this thread's
# time.thread_time: the sandbox's and the database's threads are not in it) and writes
# "ms name" per top-level import (cumulative: with what it imported) to $BENCH_IMPORTS at
# exit. On a busy machine `-X importtime`'s wall figures are mostly the load.
IMPORT_TIMER = """
import atexit, importlib._bootstrap as boot, os, runpy, sys, time
tops, depth, find = [], [0], boot._find_and_load
def timed(name, import_):
    depth[0] += 1
    t0 = time.thread_time()
    try:
        return find(name, import_)
    finally:
        depth[0] -= 1
        if depth[0] == 0:
            tops.append(f"{(time.thread_time() - t0) * 1000:.3f} {name}")
boot._find_and_load = timed
@atexit.register
def report():
    with open(os.environ["BENCH_IMPORTS"], "w") as out:
        out.write("\\n".join(tops))
sys.argv = ["roost", *sys.argv[1:]]
runpy.run_module("bridge.cli.main", run_name="__main__")
"""


def importtime(argv: list[str], env: dict[str, str], top: int, how: str) -> list[tuple[float, str]]:
    """The `top` heaviest top-level imports (cumulative CPU ms) of one run of `argv`
    (`how`: "run" to its end, "tty" on a pty until the prompt shows, "serve" until ready)."""
    timed = [PY, "-c", IMPORT_TIMER, *argv[3:]]  # argv: python -m bridge.cli.main ARGS
    measure = {"run": run_once, "tty": chat_once, "serve": serve_once}[how]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "imports"
        measure(timed, env | {"BENCH_IMPORTS": str(out)})
        lines = out.read_text().splitlines()
    rows = [(float(ms), name) for ms, name in (line.split(" ", 1) for line in lines)]
    return sorted(rows, reverse=True)[:top]


def environment(home: Path, config: Path, model: str | None, repo: Path = REPO) -> dict[str, str]:
    """The children's environment: byte code written, a home of the bench's own, the
    roost of checkout `repo` (its folder first on the path: `python -m` from there)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROOST_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env |= {"ROOST_HOME": str(home), "ROOST_CONFIG": str(config), "PYTHONPATH": str(repo)}
    if model is not None:
        env |= {
            "ROOST_LLM__BASE_URL": model,
            "ROOST_LLM__MODEL": "m1",
            "ROOST_LLM__API_KEY": API_KEY,
            "ROOST_WEB__PORT": "0",
        }
    return env


@contextlib.contextmanager
def fake_model() -> Iterator[str]:
    """The base URL of a fake OpenAI-compatible server (echo answers) on a thread of its own."""
    from tests.fakes.fake_openai import FakeOpenAI

    loop = asyncio.new_event_loop()
    started: list[str] = []
    up, stop = threading.Event(), asyncio.Event()

    async def run() -> None:
        async with FakeOpenAI(api_key=API_KEY, models=["m1"]) as fake:
            started.append(fake.base_url)
            up.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    try:
        if not up.wait(HANG_S):
            raise RuntimeError("the fake model server did not start")
        yield started[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(HANG_S)
        loop.close()


TG_TOKEN = "123456:AAbench-token-bench-token-bench-tok"  # a well-formed token, no bot
DEAD_TG = "http://127.0.0.1:9/bot"  # nobody listens there


def roost_rows(home: Path, config: Path, url: str, repo: Path) -> list[tuple[str, Measure]]:
    """The roost commands of checkout `repo`, each a measure."""
    bare = environment(home, config, None, repo)
    dead = environment(home, config, "http://127.0.0.1:9/v1", repo)  # nobody listens there
    live = environment(home, config, url, repo)
    # the Telegram channel made and started against a Bot API nobody listens on: its
    # first attempt fails at once and it retries in the background (the ready line
    # does not wait for Telegram)
    telegram = live | {"ROOST_TELEGRAM__TOKEN": TG_TOKEN, "ROOST_TELEGRAM__API_BASE_URL": DEAD_TG}
    return [
        ("roost --help", lambda: run_once([*ROOST, "--help"], bare)),
        ("roost send /help (no model)", lambda: run_once([*ROOST, "send", "/help"], bare)),
        ("roost send /help (model set)", lambda: run_once([*ROOST, "send", "/help"], dead)),
        (
            "roost send hello (fake model)",
            lambda: run_once([*ROOST, "send", "--chat", "bench", "hello"], live),
        ),
        ("roost doctor (no model)", lambda: run_once([*ROOST, "doctor"], bare)),
        ("roost doctor (fake model)", lambda: run_once([*ROOST, "doctor"], live)),
        ("roost pair local", lambda: run_once([*ROOST, "pair", "local"], bare)),
        ("roost mcp: to tools/list", lambda: mcp_once([*ROOST, "mcp", "--tenant", "local"], bare)),
        ("roost chat: time to prompt", lambda: chat_once([*ROOST, "chat"], dead)),
        ("roost serve: time to ready", lambda: serve_once([*ROOST, "serve"], live)),
        ("serve, Telegram set: to ready", lambda: serve_once([*ROOST, "serve"], telegram)),
        ("serve: msg 1 at ready", lambda: turn_once(1, 0.0, bare)),
        ("serve: msg 1, 0.5 s after ready", lambda: turn_once(1, 0.5, bare)),
        ("serve: msg 4, 0.5 s after ready", lambda: turn_once(4, 0.5, bare)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="one cold run each (CI: it still runs)")
    ap.add_argument("--imports", type=int, default=12, help="heaviest imports listed")
    ap.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also time the roost of checkout DIR (e.g. a worktree of main) in the same "
        "rounds, printed as 'base:' rows (this venv's Python and libraries)",
    )
    args = ap.parse_args()
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="roost-startup-") as tmp, fake_model() as url:
        config = Path(tmp) / "roost.toml"
        config.write_text("")
        bare = environment(Path(tmp) / "home", config, None)
        rows: list[tuple[str, Measure]] = [
            ("python -I -c pass (floor)", lambda: run_once([PY, "-I", "-c", "pass"], bare)),
            ('python -c "import bridge"', lambda: run_once([PY, "-c", "import bridge"], bare)),
            *roost_rows(Path(tmp) / "home", config, url, REPO),
        ]
        if args.baseline is not None:
            base = args.baseline.resolve()
            rows += [
                (f"base: {name}", measure)
                for name, measure in roost_rows(Path(tmp) / "base-home", config, url, base)
            ]
        load = os.getloadavg()[0]
        print(
            f"start-up, {runs} alternating runs each (min / median); load average {load:.2f} "
            f"on {os.cpu_count()} cpus; byte code and start-up caches written"
        )
        if args.baseline is not None:
            print(f"base: the roost of {args.baseline.resolve()}")
        print(
            f"{'what':37} {'wall min':>8} {'median':>7} {'cpu min':>8} {'median':>7} {'x floor':>7}"
        )
        figures = alternating(rows, runs, warm=not args.quick)
        floor_cpu = max(figures[0][3], 1e-6)
        for (name, _), (wmin, wmed, cmin, cmed) in zip(rows, figures, strict=True):
            print(
                f"{name:37} {wmin * 1000:8.1f} {wmed * 1000:7.1f} "
                f"{cmin * 1000:8.1f} {cmed * 1000:7.1f} {cmed / floor_cpu:7.1f}"
            )
        print(
            f"(ms; x floor: median CPU / the floor's) load average after: {os.getloadavg()[0]:.2f}"
        )
        if args.quick:
            print("(--quick: no warm-up, so the figures are cold starts; no import lists)")
            return
        dead = environment(Path(tmp) / "home", config, "http://127.0.0.1:9/v1")
        live = environment(Path(tmp) / "home", config, url)
        for title, argv, env, how in (
            ("roost send /help", [*ROOST, "send", "/help"], dead, "run"),
            ("roost chat (to the prompt)", [*ROOST, "chat"], dead, "tty"),
            ("roost serve (to ready)", [*ROOST, "serve"], live, "serve"),
        ):
            print(f"\nheaviest top-level imports of {title} (cumulative CPU ms, one run):")
            for ms, name in importtime(argv, env, args.imports, how):
                print(f"  {ms:8.1f}  {name}")


if __name__ == "__main__":
    main()

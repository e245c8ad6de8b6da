"""Start-up benchmark: how long `roost` takes before it is of use, next to its floors.

Times, in one run, with a fresh home and an empty config file:
- the floors: `python -I -c pass` (the interpreter alone) and
  `python -c "import bridge"` (the package, nothing of it used);
- `roost --help`;
- `roost send /help` (a command through the full pipeline: settings,
  database, audit chain, core), without a model and with one configured
  (an OpenAI-compatible URL nobody listens on: a command never calls it);
- `roost chat` under a pseudo-terminal, from the start to the moment the
  prompt `you>` is on the screen (time-to-prompt), then Ctrl-D.
Each is run `--runs` times after one warm-up (byte-code caches written);
medians are printed as wall time, CPU time (user + system of the child,
which a busy machine inflates less) and both as multiples of the
interpreter floor measured in the same run. The machine's load is printed
with them. A second table lists the heaviest imports of `roost send /help`
and `roost chat` (`python -X importtime`, cumulative).

Run: .venv/bin/python -m bench.startup [--runs 7] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
ROOST = [PY, "-m", "bridge.cli.main"]
PROMPT = b"you>"
HANG_S = 120.0  # a safety net against a hung child, never a measure


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, cpu s) of one command run to its end; its output is discarded."""
    cpu0, t0 = child_cpu(), time.perf_counter()
    subprocess.run(
        argv,
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=HANG_S,
        check=False,
    )
    return time.perf_counter() - t0, child_cpu() - cpu0


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
        cwd=REPO,
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


Measure = Callable[[], tuple[float, float]]


def medians(measure: Measure, runs: int, warm: bool = True) -> tuple[float, float]:
    if warm:
        measure()  # warm-up: byte-code caches, page cache
    samples = [measure() for _ in range(runs)]
    return (
        statistics.median(s[0] for s in samples),
        statistics.median(s[1] for s in samples),
    )


def importtime(
    argv: list[str], env: dict[str, str], top: int, tty: bool
) -> list[tuple[float, str]]:
    """The `top` heaviest top-level imports (cumulative ms) of one run of `argv`
    (`tty`: on a pty until the prompt shows, as `chat_once` runs it)."""
    timed = [PY, "-X", "importtime", *argv[1:]]
    if tty:
        text = chat_session(timed, env)[2].decode(errors="replace").replace("\r", "")
    else:
        text = subprocess.run(
            timed,
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=HANG_S,
            check=False,
        ).stderr.decode(errors="replace")
    rows = []
    for line in text.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)  # top level: no indent
        if m:
            rows.append((int(m.group(1)) / 1000, m.group(2)))
    return sorted(rows, reverse=True)[:top]


def environment(home: Path, config: Path, model: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env |= {"ROOST_HOME": str(home), "ROOST_CONFIG": str(config), "PYTHONPATH": str(REPO)}
    if model:  # nobody listens there: a command never calls the model
        env |= {
            "ROOST_LLM__BASE_URL": "http://127.0.0.1:9/v1",
            "ROOST_LLM__MODEL": "m1",
            "ROOST_LLM__API_KEY": "sk-bench-000000000000000000",
        }
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="one cold run each (CI: it still runs)")
    ap.add_argument("--imports", type=int, default=12, help="heaviest imports listed")
    args = ap.parse_args()
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="roost-startup-") as tmp:
        home, config = Path(tmp) / "home", Path(tmp) / "roost.toml"
        config.write_text("")
        bare, model = environment(home, config, False), environment(home, config, True)
        rows: list[tuple[str, Measure]] = [
            ("python -I -c pass (floor)", lambda: run_once([PY, "-I", "-c", "pass"], bare)),
            ('python -c "import bridge"', lambda: run_once([PY, "-c", "import bridge"], bare)),
            ("roost --help", lambda: run_once([*ROOST, "--help"], bare)),
            ("roost send /help (no model)", lambda: run_once([*ROOST, "send", "/help"], bare)),
            ("roost send /help (model set)", lambda: run_once([*ROOST, "send", "/help"], model)),
            ("roost chat: time to prompt", lambda: chat_once([*ROOST, "chat"], model)),
        ]
        load = os.getloadavg()[0]
        print(f"start-up, medians of {runs} runs; load average {load:.2f} on {os.cpu_count()} cpus")
        print(f"{'what':32} {'wall ms':>9} {'x floor':>8} {'cpu ms':>8} {'x floor':>8}")
        floor: tuple[float, float] | None = None
        for name, measure in rows:
            wall, cpu = medians(measure, runs, warm=not args.quick)
            floor = floor or (wall, max(cpu, 1e-6))
            print(
                f"{name:32} {wall * 1000:9.1f} {wall / floor[0]:8.1f} "
                f"{cpu * 1000:8.1f} {cpu / floor[1]:8.1f}"
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        if args.quick:
            print("(--quick: no warm-up, so the figures are cold starts; no import lists)")
            return
        for title, argv, tty in (
            ("roost send /help", [*ROOST, "send", "/help"], False),
            ("roost chat (to the prompt)", [*ROOST, "chat"], True),
        ):
            print(f"\nheaviest top-level imports of {title} (cumulative ms, one run):")
            for ms, name in importtime(argv, model, args.imports, tty):
                print(f"  {ms:8.1f}  {name}")


if __name__ == "__main__":
    main()

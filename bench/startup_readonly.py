"""Start-up where roost's user cannot write its installation, as under the systemd unit.

The unit runs roost as its own user with `ProtectSystem=strict`: no roost
process can write `/opt/roost`, so byte code and roost's start-up caches
(`bridge.dataclass_code`, `bridge.regex_code`, `bridge.forward_refs`,
`bridge.screening.shape_cache`) exist only if they were written ahead. Three
copies of this checkout's `bridge/` and `forge/` (their `__pycache__` left out)
are measured side by side in one run:

- nothing written ahead;
- byte code only (`python -m compileall bridge forge`);
- `make`'s step (`python -m bridge.cli.precompile`: byte code and the caches).

Then each copy gets a plain FILE named `__pycache__` in every package folder
that has none, and a folder in the place of each cache file it lacks, so
nothing more can be written there (a process fails to write byte code or a
cache exactly as it does in a read-only tree, silently; `make`'s copy lacks
nothing a daemon's start writes: tests/spine/test_precompile.py), and
the rows run in turns, `--runs` times each (one round per copy per run):
`roost send /help` (its CPU, with the children it reaped, from `wait4`);
`roost serve` to its ready line (the daemon's own CPU then, from /proc) and
its whole run with its spare sandbox helper after 1.5 s; and a sandbox
runner's first call in a fresh process (the process and the helper it
started: the helper imports forge from the copy). Printed: median (min) CPU ms
per copy, and nothing-written / `make`'s step.

Run: .venv/bin/python -m bench.startup_readonly [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.machine import speed_line

REPO = Path(__file__).resolve().parent.parent
COPIES: dict[str, list[list[str]]] = {
    "nothing written": [],
    "byte code only": [["-m", "compileall", "-q", "bridge", "forge"]],
    "make's step": [["-m", "bridge.cli.precompile"]],
}
TOOL = "def run(n: int) -> int:\n    'Square a number.'\n    return n * n\n"
FIRST_CALL = f"""
import asyncio, tempfile
from pathlib import Path
from forge.runner import SandboxRunner
async def main():
    runner = SandboxRunner()
    with tempfile.TemporaryDirectory() as ws:
        result = await runner.run({TOOL!r}, {{"n": 7}}, Path(ws))
        await runner.aclose()
    assert result.ok, result
asyncio.run(main())
"""


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    skip = ("ROOST_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    return {**env, **(extra or {})}


def prepare(root: Path) -> dict[str, Path]:
    """The copies, each prepared as its name says, then made unwritable."""
    trees = {}
    for name, steps in COPIES.items():
        tree = root / name.replace(" ", "-").replace("'", "")
        for package in ("bridge", "forge"):
            shutil.copytree(
                REPO / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
            )
        for step in steps:
            subprocess.run(
                [sys.executable, *step], cwd=tree, env=environment(), check=True,
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
        for folder in tree.rglob("*"):
            if (folder / "__init__.py").is_file() and not (folder / "__pycache__").exists():
                (folder / "__pycache__").write_text("")  # no byte code can be written here
        caches = tree / "bridge" / "__pycache__"
        if caches.is_dir():
            for stem in ("dataclass-code", "forward-refs", "regex-code", "regex-shape"):
                path = caches / f"{stem}.{sys.implementation.cache_tag}.marshal"
                if not path.exists():
                    path.mkdir()  # a cache that cannot be read nor written
        trees[name] = tree
    return trees


def cpu_ms(usage: os.struct_rusage) -> float:
    return 1000 * (usage.ru_utime + usage.ru_stime)


def send_help(tree: Path, home: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "bridge.cli.main", "send", "/help"]
    env = environment({"ROOST_HOME": str(home), "ROOST_CONFIG": str(home / "none.toml")})
    (home / "none.toml").parent.mkdir(parents=True, exist_ok=True)
    (home / "none.toml").write_text("")
    proc = subprocess.Popen(
        argv, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    assert status == 0, status
    return {"roost send /help": cpu_ms(usage)}


def serve(tree: Path, home: Path) -> dict[str, float]:
    (home / "none.toml").parent.mkdir(parents=True, exist_ok=True)
    (home / "none.toml").write_text("")
    env = environment(
        {
            "ROOST_HOME": str(home),
            "ROOST_CONFIG": str(home / "none.toml"),
            "ROOST_WEB__PORT": "0",
            "ROOST_LLM__BASE_URL": "http://127.0.0.1:9/v1",  # nobody listens: never asked
            "ROOST_LLM__API_KEY": "sk-bench-000000000000",
            "ROOST_LLM__MODEL": "m1",
            "ROOST_LIMITS__SHUTDOWN_GRACE_S": "1",
        }
    )
    argv = [sys.executable, "-m", "bridge.cli.main", "serve"]
    proc = subprocess.Popen(
        argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdout is not None
    line = ""
    while not line.startswith("roost: model"):
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("roost serve exited before its ready line")
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    ready = (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    time.sleep(1.5)  # the spare sandbox helper starts, the screens' tables are built
    proc.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.stdout.close()
    return {
        "roost serve, CPU at its ready line": ready,
        "roost serve, whole run with its helper": cpu_ms(usage),
    }


def first_call(tree: Path, home: Path) -> dict[str, float]:
    proc = subprocess.Popen([sys.executable, "-c", FIRST_CALL], cwd=tree, env=environment())
    _, status, usage = os.wait4(proc.pid, 0)
    assert status == 0, status
    return {"a runner's first call (process + helper)": cpu_ms(usage)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run (CI: the script runs)")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    print(speed_line())
    rows: dict[tuple[str, str], list[float]] = {}
    measures: list[Callable[[Path, Path], dict[str, float]]] = [send_help, serve, first_call]
    with tempfile.TemporaryDirectory(prefix="roost-ro-") as tmp:
        trees = prepare(Path(tmp))
        for i in range(runs):
            for measure in measures:
                for name, tree in trees.items():
                    home = Path(tmp) / "homes" / f"{i}-{measure.__name__}-{tree.name}"
                    for row, ms in measure(tree, home).items():
                        rows.setdefault((row, name), []).append(ms)
    print(f"CPU ms, median (min) of {runs} run(s) taking turns; load {os.getloadavg()[0]:.2f}")
    names = list(COPIES)
    print(f"  {'':44s}" + "".join(f"{n:>20s}" for n in names) + "   nothing / make's")
    for row in dict.fromkeys(r for r, _ in rows):
        cells = [rows[(row, n)] for n in names]
        shown = "".join(f"{statistics.median(c):12.0f} ({min(c):5.0f})" for c in cells)
        ratio = statistics.median(cells[0]) / statistics.median(cells[-1])
        print(f"  {row:44s}{shown}   {ratio:.2f}x")


if __name__ == "__main__":
    main()

"""Where a CSV call costs a fresh sandbox child, one step at a time (issue 26 item 2).

A process started like a helper (`python -I -S`, the helper's path, `prepare`,
the rehearsal, the call's globals as the zygote builds them) forks, for each
tool below, `n` children that each do what a waiting child does (forge.child's
warm-up), then take a job and run its tool stage as a child does (`_run_tool`:
the write budget, the path gate's globals, the tool, its outcome), and report
the minor page faults and the CPU time of that stage alone. Each tool adds one
step to the one before it, up to the CSV tool of `bench.sandbox`, so the
differences between rows say what each step costs a fresh child: mostly pages
it copies on first touch (Python 3.11 writes the refcount of every object it
touches), which the same tool's second run in the same child ("again") no
longer pays. Faults are the steady figure (they do not move with the machine's
load); CPU times do.

The children are not confined (no Landlock, seccomp or rlimits: none of them is
on the tool stage) and answer on a pipe; everything else is forge's own code.

Run: .venv/bin/python -m bench.sandbox_steps [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.sandbox import CSV_TOOL, TRIVIAL_TOOL
from forge.helper_process import helper_paths

_HEAD = "def run(path: str) -> dict:\n"
_OPEN = _HEAD + '    with open(path, newline="") as f:\n{body}    return {{}}\n'
STEPS: dict[str, str] = {
    "trivial": TRIVIAL_TOOL,
    "import csv": "import csv\n" + _HEAD + "    return {}\n",
    "csv.reader looked up": "import csv\n" + _HEAD + "    csv.reader\n    return {}\n",
    "open, close (gate)": _OPEN.format(body="        pass\n"),
    "its lines": _OPEN.format(body="        for line in f:\n            pass\n"),
    "csv.reader": "import csv\n"
    + _OPEN.format(body="        for row in csv.reader(f):\n            pass\n"),
    "csv.DictReader": "import csv\n"
    + _OPEN.format(body="        for row in csv.DictReader(f):\n            pass\n"),
    "CSV tool": CSV_TOOL,
    "CSV tool, again": CSV_TOOL,
}

# Run in the helper-like process: argv = workspace, n, then (name, source) pairs as
# JSON on stdin; prints one JSON row per tool: name, [faults, cpu µs] per child.
_PROGRAM = """
import gc, json, os, resource, sys
from forge.child import _Stages, _run_tool, _warm, prepare_call_globals
from forge.code_cache import CodeCache
from forge.protocol.calls import Request
from forge.protocol.jobs import decode_job, encode_job
from forge.protocol.limits import Limits
from forge.rehearsal import rehearse_calls
from forge.warmup import prepare

ws, n = sys.argv[1], int(sys.argv[2])
tools = json.load(sys.stdin)
ctx, _ = prepare()
rehearse_calls(ctx)
pre = prepare_call_globals(ctx)  # as the zygote: every child's copy-on-write copy
codes = CodeCache(True)
ws_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
os.chdir(ws)
gc.collect()
gc.freeze()

def usage():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_minflt, (u.ru_utime + u.ru_stime) * 1e6

for name, source in tools:
    req = Request(1, source, {"path": "data.csv"} if "path" in source else {"n": 7}, ws, (),
                  5.0, 1 << 16, Limits(), token=bytes(16))
    blob = encode_job(codes.compile(source), req, ws)
    runs = 2 if name.endswith("again") else 1
    rows = []
    for _ in range(n):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _warm(ctx, os.memfd_create("job"), pre)  # its empty job memfd, as a child's
            job = decode_job(blob)
            for _ in range(runs):
                faults, cpu = usage()
                _run_tool(job, ctx, pre, ws_fd, _Stages())
                after = usage()
            os.write(w, json.dumps([after[0] - faults, after[1] - cpu]).encode())
            os._exit(0)
        os.close(w)
        data = os.read(r, 4096)
        os.close(r)
        os.waitpid(pid, 0)
        rows.append(json.loads(data))
    print(json.dumps([name, rows]), flush=True)
"""


def measure(n: int, steps: dict[str, str] | None = None) -> list[tuple[str, float, float]]:
    """(name, median faults, median CPU µs) of each tool's stage in `n` fresh children."""
    program = f"import sys; sys.path[:0] = {helper_paths()!r}\n" + _PROGRAM
    tools = json.dumps(list((steps or STEPS).items()))
    with tempfile.TemporaryDirectory(prefix="forge-bench-steps-") as ws:
        rows = "\n".join(f"{i},{i * 2},{i % 7}" for i in range(100))
        (Path(ws) / "data.csv").write_text("a,b,c\n" + rows + "\n")
        argv = [sys.executable, "-I", "-S", "-c", program, ws, str(n)]
        out = subprocess.run(
            argv, input=tools, env={}, cwd="/", capture_output=True, text=True, check=True
        )
    result = []
    for line in out.stdout.splitlines():
        name, children = json.loads(line)
        faults = sorted(c[0] for c in children)
        cpu = sorted(c[1] for c in children)
        result.append((name, faults[len(faults) // 2], cpu[len(cpu) // 2]))
    return result


def main() -> None:
    n = 5 if "--quick" in sys.argv[1:] else 150
    load = os.getloadavg()[0]
    print(f"tool stage in a fresh child, median of {n} children each (load {load:.2f})")
    print(f"  {'tool':24s} {'faults':>7s} {'CPU µs':>8s}")
    for name, faults, cpu in measure(n):
        print(f"  {name:24s} {faults:7.0f} {cpu:8.0f}")
    print(f"(load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()

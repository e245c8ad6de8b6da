"""The helper's rehearsal: forge's own tool run through a child's call path before
the zygote forks, so that every child starts warm.

A child is a copy-on-write copy of the zygote, and most of what a fresh child
costs is pages it copies on its first write: a code object the interpreter
quickens or specialises on its first runs (Python 3.11 rewrites byte code in
place), a type-attribute cache entry filled on a first lookup, a module's lazy
state set up on first use (csv's reader, re's compiled patterns, json's
scanner). Those writes happen once, here, in the helper before the zygote is
forked, and every child inherits the result instead of making (and copying)
it again.

The rehearsed tool is a constant of this module: no request, argument, secret
or tenant file is involved; its workspace is a temporary directory removed
afterwards, and what it allocated is collected before the zygote forks. It runs
unconfined, in the helper, exactly like the compile step does.

The workspace is made and removed with `os` alone: `tempfile` imports `shutil`,
which imports zlib, bz2 and lzma (six shared objects no tool can use), and every
module the helper holds when it forks its zygote is mapped into every child; each
mapping is work for every fork and every exit (issue 26).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
from typing import Any

from forge.child import HelperContext, rehearse
from forge.code_cache import CodeCache
from forge.protocol.calls import Request
from forge.protocol.jobs import decode_job, encode_job
from forge.protocol.limits import Limits

REHEARSALS = 8  # runs: 0 -> 2 -> 8 -> 40 gave 480 -> 455 -> 437 -> 436 faults a child (trivial)
TOOL = '''
import csv
import json
import math
import re
from datetime import datetime, timedelta


def run(path: str, n: int = 3) -> dict:
    """Touch what tools use most: a file, csv, json, re, dates, numbers, text."""
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rows.append({key: float(value) for key, value in row.items()})
    totals = {}
    for row in rows:
        for key, value in row.items():
            totals[key] = totals.get(key, 0) + value
    text = json.dumps({"rows": rows, "totals": totals}, sort_keys=True)
    back = json.loads(text)
    words = re.findall(r"[a-z]+", text.lower())
    when = datetime(2024, 1, 2, 3, 4, 5) + timedelta(days=n)
    line = ", ".join(f"{w}:{len(w)}" for w in sorted(set(words))[:n])
    print(line.strip().upper(), when.isoformat(), when.strftime("%Y-%m-%d"))
    return {"n": len(back["rows"]), "sum": math.fsum(totals.values()), "when": str(when.date())}
'''
DATA = "a,b,c\n" + "".join(f"{i},{i * 2},{i % 7}\n" for i in range(20))


def rehearse_calls(ctx: HelperContext, runs: int = REHEARSALS) -> dict[str, Any]:
    """Run the rehearsal tool `runs` times through the call path of a child; the last
    outcome document (a failing rehearsal warms little: tests/forge check it)."""
    code = CodeCache(ctx.layers.restricted).compile(TOOL)
    ws = _workspace()
    outcome = b"{}"
    try:
        with open(os.path.join(ws, "data.csv"), "w") as f:
            f.write(DATA)
        req = Request(0, TOOL, {"path": "data.csv"}, ws, (), 5.0, 1 << 16, Limits())
        ws_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fchdir(ws_fd)
            # with the restricted layer off (tests only) the tool's print is the real
            # one: nothing of it may sit in this helper's stdout, the runner's pipe
            with contextlib.redirect_stdout(io.StringIO()):
                for _ in range(runs):
                    job = decode_job(encode_job(code, req, ws))
                    outcome = rehearse(ctx, job, ws_fd)
        finally:
            os.fchdir(cwd)
            os.close(cwd)
            os.close(ws_fd)
    finally:
        _remove(ws)
        gc.collect()
    doc: dict[str, Any] = json.loads(outcome)
    return doc


def _workspace() -> str:
    """A new private directory for the rehearsal (as `tempfile.mkdtemp` makes one:
    a random name, mode 0700, never an existing path). The helper's environment is
    empty, so it lies in /tmp unless that is missing."""
    base = "/tmp" if os.path.isdir("/tmp") else "/"
    for _ in range(100):
        path = os.path.join(base, "forge-rehearsal-" + os.urandom(8).hex())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError("no free name for the rehearsal's workspace")


def _remove(path: str) -> None:
    """Remove the rehearsal's workspace and whatever is in it (errors ignored, as
    `shutil.rmtree(ignore_errors=True)`): symlinks are removed, never followed."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        entries = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _remove(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue
    try:
        os.rmdir(path)
    except OSError:
        return

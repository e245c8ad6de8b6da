"""The test fork server pre-imports what `roost serve` imports on its way to ready, and
what `roost chat` imports on its way to its prompt.

A daemon the suite starts forks from tests/forkserver.py's server: what the server
imported is paid once per worker, what the daemon imports after the fork is paid at
every start (the web channel with aiohttp and forge's runner were ~0.1-0.3 s of CPU a
start). A fresh process does the server's pre-import (`_preload`), then runs
`roost serve` and reports, at its ready line, the modules of roost, forge and aiohttp
it imported after the pre-import (a model configured: its OpenAI-compatible backend).
Asserted on `sys.modules`, never on time.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c
from tests.spine.test_terminal_startup import environment

MARK = "AFTER "
PROBE = f"""
import json, os, runpy, sys
from tests.forkserver import _preload
_preload()
before = set(sys.modules)
write = sys.stdout.write
def watch(text):
    if text.startswith("roost: model"):
        after = sorted(set(sys.modules) - before)
        sys.__stderr__.write({MARK!r} + json.dumps(after) + "\\n")
        sys.__stderr__.flush()
        os._exit(0)
    return write(text)
sys.stdout.write = watch
sys.argv = ["roost", "serve"]
runpy.run_module("bridge.cli.main", run_name="__main__")
"""
HEAVY = ("bridge.", "forge.", "aiohttp")


def test_a_forked_daemon_imports_none_of_roost_on_its_way_to_ready(home: Path) -> None:
    env = environment(home) | {"ROOST_WEB__PORT": "0", "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    done = python_c(PROBE, env=env, check=False)
    [line] = [x for x in done.stderr.splitlines() if x.startswith(MARK)] or [done.stderr]
    assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads(line.removeprefix(MARK))
    assert [name for name in after if name.startswith(HEAVY)] == []


# `roost chat` on a pseudo-terminal, forked after the pre-import as the server forks it,
# left with Ctrl-D at its prompt; it writes what it imported after the pre-import
CHAT_PROBE = """
import json, os, runpy, select, sys, time
from tests.forkserver import _preload
from tests.waits import HANG_S
out = sys.argv[1]
_preload()
before = set(sys.modules)
master, slave = os.openpty()
pid = os.fork()
if pid == 0:
    import fcntl, termios
    os.setsid()
    os.close(master)
    for fd in (0, 1, 2):
        os.dup2(slave, fd)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.argv = ["roost", "chat"]
    try:
        runpy.run_module("bridge.cli.main", run_name="__main__")
    except SystemExit:
        pass
    with open(out, "w") as f:
        json.dump(sorted(set(sys.modules) - before), f)
    os._exit(0)
os.close(slave)
seen, left, deadline = b"", False, time.monotonic() + HANG_S
while time.monotonic() < deadline:
    if not select.select([master], [], [], 1.0)[0]:
        continue
    try:
        data = os.read(master, 65536)
    except OSError:
        break
    if not data:
        break
    seen += data
    if b"\\x1b[6n" in data:  # prompt_toolkit asks where the cursor is
        os.write(master, b"\\x1b[1;1R")
    if b"you>" in seen and not left:
        left = True
        os.write(master, b"\\x04")
assert os.waitpid(pid, 0)[1] == 0 and left, seen[-2000:]
"""
TERMINAL = ("bridge.", "prompt_toolkit", "rich", "pygments", "markdown_it", "wcwidth")


def test_a_forked_chat_imports_none_of_its_terminal_on_its_way_to_the_prompt(
    home: Path, tmp_path: Path
) -> None:
    env = environment(home) | {"TERM": "xterm", "COLUMNS": "100", "LINES": "40"}
    report = tmp_path / "after.json"
    done = python_c(CHAT_PROBE, str(report), env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    after = json.loads(report.read_text())
    assert [name for name in after if name.startswith(TERMINAL)] == []


def test_the_server_builds_the_screens_tables_a_daemon_builds_after_ready() -> None:
    """`roost serve` builds them right after its ready line, `roost chat` while one types:
    in a forked one they are built already (`bridge.screening.prepare.prepared`)."""
    program = (
        "from tests.forkserver import _preload\n"
        "_preload()\n"
        "from bridge.screening.prepare import prepared\n"
        "print('PREPARED', prepared())\n"
    )
    done = python_c(program)
    assert "PREPARED True" in done.stdout, done.stderr[-2000:]

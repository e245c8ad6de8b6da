"""The test fork server pre-imports what `roost serve` imports on its way to ready.

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

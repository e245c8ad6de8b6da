"""Which modules a `roost` command imported: the command runs in a subprocess whose
`atexit` hook reports every name in `sys.modules` (and each one's top-level package) on
stderr as it exits. Start-up tests assert on these names, never on time."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c

REPO = Path(__file__).resolve().parents[2]
MARK = "MODULES "
# `--import-only`: import the entry point and stop (no command runs)
PROBE = f"""
import atexit, json, runpy, sys
def report():
    names = set(sys.modules)
    names |= {{n.split(".")[0] for n in names}}
    sys.__stderr__.write({MARK!r} + json.dumps(sorted(names)) + "\\n")
atexit.register(report)
if sys.argv[1:] == ["--import-only"]:
    import bridge.cli.main
else:
    sys.argv = ["roost", *sys.argv[1:]]
    runpy.run_module("bridge.cli.main", run_name="__main__")
"""


def modules_in(stderr: str) -> set[str]:
    """The names the probe reported (modules and their top-level packages)."""
    [line] = [x for x in stderr.splitlines() if x.startswith(MARK)]
    return set(json.loads(line.removeprefix(MARK)))


def imported_by(args: list[str], env: dict[str, str]) -> tuple[int, str, set[str]]:
    """(exit status, stdout, modules imported) of `roost ARGS` in a subprocess."""
    done = python_c(PROBE, *args, env=env, check=False)
    return done.returncode, done.stdout, modules_in(done.stderr)

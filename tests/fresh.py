"""A short program run by a fresh interpreter (`python -c`), for the tests that assert on
what a new process does by itself: the modules it imports, the caches it reads or
writes, what it sets up at start. They assert on its output, never on its time.

`python_c` is bounded by `HANG_S` like every wait of the tests (tests/waits.py): a probe
that hangs fails its test instead of the whole run. It runs in the repository (so
`import bridge` finds this checkout) with this process's environment unless given one;
`env_without` is that environment less some names (`PYTHONDONTWRITEBYTECODE`, for a
probe that must write its byte code or cache files as `make test` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.waits import HANG_S

REPO = Path(__file__).resolve().parents[1]


def env_without(*names: str) -> dict[str, str]:
    """This process's environment without `names`."""
    return {k: v for k, v in os.environ.items() if k not in names}


def python_c(
    program: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = REPO,
    isolated: bool = False,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`python [-I] -c PROGRAM ARGS...` run to its end: its exit status, stdout and stderr
    as text. `check`: a non-zero exit raises (CalledProcessError, with both outputs)."""
    flags = ["-I"] if isolated else []
    return subprocess.run(
        [sys.executable, *flags, "-c", program, *args],
        env=None if env is None else dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=check,
    )

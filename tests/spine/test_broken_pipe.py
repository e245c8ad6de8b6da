"""`roost ... | head`: a reader that leaves early ends the command quietly (exit 141, as a
shell reports SIGPIPE), never with a BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PREFIX = str(Path(sys.executable).parents[2])  # a prefix must hold .venv/bin/roost


def test_a_closed_stdout_ends_the_command_without_a_traceback(home: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bridge.cli.main", "install-units", "--prefix", PREFIX],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ROOST_HOME": str(home)},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 141
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr

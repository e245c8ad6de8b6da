"""`roost serve` follows its config file from its ready line on.

Once the daemon says it is ready, the config file is replaced the way editors save
(written aside, renamed over) and the daemon must say it reloads: the file watch is
in place before the ready line. Asserted on the daemon's own lines, never on time.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from tests.spine.test_terminal_startup import environment
from tests.waits import HANG_S

READY = b"roost: model"
REPO = Path(__file__).resolve().parents[2]


async def _line_with(stream: asyncio.StreamReader, text: bytes, seen: list[bytes]) -> None:
    while True:
        line = await stream.readline()
        if not line:
            raise AssertionError(f"the daemon ended before {text!r}: {b''.join(seen)!r}")
        seen.append(line)
        if text in line:
            return


async def test_a_config_change_right_after_ready_is_reloaded(home: Path) -> None:
    env = environment(home) | {"ROOST_WEB__PORT": "0"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        "serve",
        env=env,
        cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    try:
        async with asyncio.timeout(HANG_S):  # a safety net against a hung run, not a check
            await _line_with(proc.stdout, READY, out)
            config = Path(env["ROOST_CONFIG"])
            aside = config.with_suffix(".new")
            aside.write_text("[limits]\nmax_message_chars = 1234\n")
            aside.replace(config)
            await _line_with(proc.stderr, b"changed: reloading", err)
            proc.send_signal(signal.SIGTERM)
            rest, tail = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, (b"".join(out) + rest, b"".join(err) + tail)
    assert os.fspath(config) in b"".join(err).decode()  # the line names the file

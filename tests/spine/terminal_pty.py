"""A terminal for the terminal tests: `roost chat` on a pty, seen through pyte.

The child gets the pty as its controlling terminal (a new session, then
TIOCSCTTY), so Ctrl-C typed there is a real SIGINT when the line is cooked
and a key when prompt_toolkit has it raw, as in a real terminal. What the
child writes goes through pyte, a VT100 emulator, so tests assert on the
screen a person would see, not on escape codes.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import sys
import termios
from collections.abc import Callable, Mapping

import pyte

from tests.forkserver import controlling_tty
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]
COLS, ROWS = 100, 60
WAIT_S = HANG_S  # a safety net against a hung run, not a speed check


class _Screen(pyte.Screen):
    """Answers the cursor-position reports prompt_toolkit asks for."""

    def __init__(self, master: int) -> None:
        super().__init__(COLS, ROWS)
        self.master = master

    def write_process_input(self, data: str) -> None:
        os.write(self.master, data.encode())


class Terminal:
    """`roost chat` (or any roost command) running on a pty of COLS x ROWS."""

    def __init__(self) -> None:
        self.master = -1
        self.proc: asyncio.subprocess.Process | None = None
        self.screen: _Screen | None = None
        self.raw = b""
        self._changed = asyncio.Event()

    async def start(self, args: list[str], env: Mapping[str, str]) -> None:
        self.master, child = os.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.screen = _Screen(self.master)
        self._stream = pyte.ByteStream(self.screen)
        self.proc = await asyncio.create_subprocess_exec(
            *ROOST,
            *args,
            env={**env, "TERM": "xterm", "COLUMNS": str(COLS), "LINES": str(ROWS)},
            stdin=child,
            stdout=child,
            stderr=child,
            start_new_session=True,
            preexec_fn=controlling_tty,  # after setsid; a fork server does it too
        )
        os.close(child)
        asyncio.get_running_loop().add_reader(self.master, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the pty
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master)
        self.raw += data
        self._stream.feed(data)
        self._changed.set()

    def text(self) -> str:
        assert self.screen is not None
        return "\n".join(line.rstrip() for line in self.screen.display)

    async def until(self, ready: Callable[[str], bool], what: str) -> str:
        """Wait until `ready(screen text)`; fail naming `what` and showing the screen."""
        try:
            async with asyncio.timeout(WAIT_S):
                while not ready(self.text()):
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"never saw {what}; the screen:\n{self.text()}") from None
        return self.text()

    async def see(self, snippet: str, count: int = 1) -> str:
        return await self.until(lambda t: t.count(snippet) >= count, repr(snippet))

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    async def exit_status(self) -> int:
        assert self.proc is not None
        async with asyncio.timeout(WAIT_S):
            status = await self.proc.wait()
        return status

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self.master >= 0:
            asyncio.get_running_loop().remove_reader(self.master)
            os.close(self.master)
            self.master = -1

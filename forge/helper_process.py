"""One sandbox helper process as the daemon holds it: started, spoken to, shut.

`start_helper` launches forge.worker as `python -I` with an empty environment
and waits for its `Hello`. `HelperProcess` is the asyncio protocol of that
process: request frames out, one reply frame per call back (forge.protocol).
Replies are decoded as their bytes arrive (`pipe_data_received`) and complete
the waiting call's future directly: no stream reader task in between. A
frame `{"op": "net", ...}` is a child's `net` request; it goes to `on_net`
(the runner's broker), whose answer is written back as a frame on stdin. When the
helper dies or breaks the protocol, every call it carried fails with
ConnectionError.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from forge.layers import Layers
from forge.protocol.calls import Hello, Reply, decode_hello, reply_of
from forge.protocol.fields import load
from forge.protocol.frames import FrameReader, ProtocolError
from forge.protocol.net import NetAsk, decode_ask

OnNet = Callable[["HelperProcess", NetAsk], None]

PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from forge.worker import main; main()"
SHUT_WAIT_S = 5


class HelperProcess(asyncio.SubprocessProtocol):
    """The helper process and its protocol: frames out, one reply frame per call."""

    def __init__(self, limit: int, on_net: OnNet | None = None) -> None:
        loop = asyncio.get_running_loop()
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.pending: dict[int, asyncio.Future[Reply]] = {}
        self.hello: asyncio.Future[Hello] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.dead = False
        self.zygote_pid: int | None = None
        self._broken = False
        self._frames = FrameReader(limit)  # a reply larger than any the helper may send
        self._paused = False
        self._drained: list[asyncio.Future[None]] = []
        self._on_net = on_net

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport
        stdin = transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self.stdin = stdin

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd != 1 or self._broken:
            return
        try:
            for doc in self._frames.feed(data if isinstance(data, bytes) else data.encode()):
                self._frame(doc)
        except ProtocolError:  # the helper broke the protocol: nothing it says counts
            self._broken = True
            self._down()

    def _frame(self, doc: bytes) -> None:
        if not self.hello.done():
            self.hello.set_result(decode_hello(doc))
            return
        data = load(doc)
        if data.get("op") == "net":  # a child's `net` request, relayed
            ask = decode_ask(data)
            if self._on_net is not None:
                self._on_net(self, ask)
            return
        reply = reply_of(data)
        fut = self.pending.pop(reply.id, None)
        if fut is not None and not fut.done():
            fut.set_result(reply)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._down()

    def process_exited(self) -> None:
        # New calls go to a new helper; the calls this one carried fail at the EOF
        # of its stdout (after any replies it wrote before exiting are delivered).
        self.dead = True
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._down()
        self._wake_writers()
        if self.transport is not None:
            self.transport.close()

    def _down(self) -> None:
        """The helper is gone (or no longer readable): fail what it carried."""
        self.dead = True
        self.kill()  # no-op when it has exited
        if not self.hello.done():
            self.hello.set_exception(ConnectionError("sandbox helper exited"))
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("sandbox helper exited"))
        self.pending.clear()

    def kill(self) -> None:
        if self.transport is not None and self.transport.get_returncode() is None:
            with contextlib.suppress(ProcessLookupError):
                self.transport.kill()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_writers()

    def _wake_writers(self) -> None:
        for fut in self._drained:
            if not fut.done():
                fut.set_result(None)
        self._drained.clear()

    async def send(self, data: bytes) -> None:
        if self.dead or self.stdin is None or self.stdin.is_closing():
            raise ConnectionError("sandbox helper exited")
        self.stdin.write(data)
        if self._paused:
            fut = asyncio.get_running_loop().create_future()
            self._drained.append(fut)
            await fut
            if self.dead:
                raise ConnectionError("sandbox helper exited")

    def pid(self) -> int | None:
        return self.transport.get_pid() if self.transport is not None else None

    def close(self) -> None:
        """EOF on its stdin: the helper finishes its calls and exits."""
        if self.stdin is not None:
            self.stdin.close()

    async def shut(self) -> None:
        """Close it and wait for it to exit (killing it if it does not)."""
        self.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), SHUT_WAIT_S)
        except TimeoutError:
            self.kill()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.exited), SHUT_WAIT_S)
        if self.transport is not None:
            self.transport.close()


async def start_helper(
    python: str, layers: Layers, max_reply: int, on_net: OnNet | None = None
) -> tuple[HelperProcess, Hello]:
    """A new helper running with `layers` (its command line; none switched off: no
    argument) and its `Hello`; RuntimeError when it fails to start."""
    extra = [json.dumps(asdict(layers))] if layers.switched_off() else []
    loop = asyncio.get_running_loop()
    _, helper = await loop.subprocess_exec(
        lambda: HelperProcess(max_reply, on_net),
        python,
        "-I",
        "-c",
        BOOT,
        PROJECT_ROOT,
        *extra,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={},
        cwd="/",
    )
    try:
        hello = await helper.hello
    except ConnectionError:
        helper.kill()
        raise RuntimeError("sandbox helper failed to start") from None
    helper.zygote_pid = hello.zygote
    return helper, hello

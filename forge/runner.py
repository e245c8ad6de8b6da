"""SandboxRunner: the daemon-side async API to the sandbox helper process.

    runner = SandboxRunner()
    await runner.start()            # spawns the helper, logs missing layers once
    res = await runner.run(source, {"path": "a.csv"}, workspace=Path(...))
    await runner.aclose()

Each `run` lints the source (layer 1), validates the arguments against the
schema derived from `run()`'s signature, and hands the call to a helper,
which compiles it (layer 2) and has a confined child (layers 3 and 4) forked
from its pristine zygote (forge.zygote). Each workspace, that is each tenant,
gets its own helper process (up to `max_helpers` at once, the least recently
used idle one is closed beyond that): one tenant's requests, secrets and
compiled tools never enter a process that runs another tenant's calls, so even
a total break of the tool language and of the child's confinement reaches only
that tenant's own data. `start()` starts one pristine spare helper (it probes
the machine); the first new workspace takes it.
Several calls may be in flight at once. If a helper dies it is restarted and
the calls it carried fail with kind "runtime"; a call that outlives its
deadline by a grace period restarts its helper too.

Two constructor parameters exist for tests and measurements only, both off by
default: `layers_for_tests` switches single layers off (the layer tests show
that the next layer still holds; a WARNING is logged) and `trace` records where
the time of every call goes (`stages()`; bench/sandbox.py --stages).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from forge.child import Layers
from forge.confine.probe import missing
from forge.findings import format_findings
from forge.lint import lint
from forge.protocol import (
    MAX_REQUEST,
    ErrorKind,
    FrameReader,
    Hello,
    Limits,
    ProtocolError,
    Reply,
    Request,
    decode_hello,
    decode_reply,
    encode_request,
)
from forge.schema import ToolFormatError, ToolInfo, describe_tool, validate_params

log = logging.getLogger(__name__)
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from forge.worker import main; main()"
GRACE_S = 3.0
MAX_HELPERS = 8
TRACE_KEEP = 4096


@dataclass(frozen=True, slots=True)
class RunResult:
    ok: bool
    result: Any = None
    error_kind: ErrorKind | None = None
    error_message: str = ""
    duration_ms: float = 0.0
    printed: str = ""

    def as_json(self) -> dict[str, Any]:
        """The `python -m forge run` shape: {"ok", "result", "error"}."""
        error = None if self.ok else {"kind": self.error_kind, "message": self.error_message}
        return {"ok": self.ok, "result": self.result, "error": error}


def _fail(kind: ErrorKind, message: str, started: float) -> RunResult:
    return RunResult(False, None, kind, message, round((time.monotonic() - started) * 1000, 3))


class _Helper(asyncio.SubprocessProtocol):
    """The helper process and its protocol: frames out, one reply frame per call
    (forge.protocol).

    Replies are decoded as their bytes arrive (`pipe_data_received`) and complete the
    waiting call's future directly: no stream reader task in between."""

    def __init__(self, limit: int) -> None:
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
        reply = decode_reply(doc)
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


class SandboxRunner:
    """Runs tool source in the sandbox. One instance per daemon; not a singleton."""

    def __init__(
        self,
        *,
        default_timeout_s: float = 5.0,
        max_output: int = 1 << 20,
        limits: Limits | None = None,
        python: str = sys.executable,
        layers_for_tests: Layers | None = None,
        trace: bool = False,
        max_helpers: int = MAX_HELPERS,
    ) -> None:
        """`layers_for_tests`: layers to switch off, for the layer tests only (None, the
        default, runs every layer; the helper takes them on its command line, so no
        request can switch a layer off). `trace`: keep per-stage timings of every call
        (`stages()`), for measurements only."""
        self.default_timeout_s = default_timeout_s
        self.max_output = max_output
        self.limits = limits or Limits()
        self.python = python
        self._layers = layers_for_tests or Layers()
        self._trace: deque[dict[str, float]] | None = deque(maxlen=TRACE_KEEP) if trace else None
        self.max_helpers = max(1, max_helpers)
        self._helpers: OrderedDict[str, _Helper] = OrderedDict()  # workspace -> its helper
        self._spare: _Helper | None = None  # pristine; the next new workspace takes it
        self._caps: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self._warned = False
        self._closed = False
        self._lint_cache: dict[bytes, ToolInfo | str] = {}

    async def start(self) -> None:
        async with self._lock:
            if self._spare is None and not self._helpers:
                self._spare = await self._spawn()

    async def _spawn(self) -> _Helper:
        switched_off = self._layers.switched_off()
        extra = [json.dumps(asdict(self._layers))] if switched_off else []
        loop = asyncio.get_running_loop()
        _, helper = await loop.subprocess_exec(
            lambda: _Helper(self.max_output * 2 + (1 << 16)),
            self.python,
            "-I",
            "-c",
            _BOOT,
            _PROJECT_ROOT,
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
        self._caps = hello.capabilities
        helper.zygote_pid = hello.zygote
        if not self._warned:
            self._warned = True
            if switched_off:
                log.warning("sandbox layers switched off (tests only): %s", switched_off)
            for name in self.missing_layers():
                log.warning(
                    "sandbox layer unavailable on this machine: %s (%s)",
                    name,
                    self._caps[name].get("detail", ""),
                )
        return helper

    def capabilities(self) -> dict[str, Any]:
        """What the machine offers, as probed by the helper at start."""
        return dict(self._caps)

    def missing_layers(self) -> list[str]:
        return missing(self._caps)

    def _known(self, workspace: Path | None) -> _Helper | None:
        if workspace is not None:
            return self._helpers.get(_domain(workspace))
        if self._helpers:
            return next(reversed(self._helpers.values()))
        return self._spare

    def helper_pid(self, workspace: Path | None = None) -> int | None:
        """The pid of `workspace`'s helper (default: the one used last)."""
        helper = self._known(workspace)
        return helper.pid() if helper else None

    def zygote_pid(self, workspace: Path | None = None) -> int | None:
        """The pid of the zygote its children are forked from (default: last used)."""
        helper = self._known(workspace)
        return helper.zygote_pid if helper else None

    async def _ensure(self, key: str) -> _Helper:
        helper = self._helpers.get(key)
        if helper is not None and not helper.dead and not self._closed:
            self._helpers.move_to_end(key)
            return helper
        async with self._lock:
            if self._closed:
                raise RuntimeError("runner is closed")
            helper = self._helpers.get(key)
            if helper is None or helper.dead:
                spare, self._spare = self._spare, None
                helper = spare if spare is not None and not spare.dead else await self._spawn()
                self._helpers[key] = helper
                self._evict()
            self._helpers.move_to_end(key)
            return helper

    def _evict(self) -> None:
        """Close the least recently used idle helpers beyond `max_helpers`."""
        extra = len(self._helpers) - self.max_helpers
        for key in list(self._helpers):
            if extra <= 0:
                return
            helper = self._helpers[key]
            if not helper.pending:
                del self._helpers[key]
                _close_helper(helper)
                extra -= 1

    async def run(
        self,
        source: str,
        params: Mapping[str, Any],
        workspace: Path,
        secrets: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Run `source`'s `run(**params)` in a fresh confined process."""
        started = time.monotonic()
        t0 = time.perf_counter_ns()
        timeout = self.default_timeout_s if timeout_s is None else timeout_s
        if self._layers.lint:
            checked = self._checked(source)
            if isinstance(checked, str):
                return _fail("lint", checked, started)
            info = checked
            problems = validate_params(info.schema, dict(params))
            if problems:
                return _fail("runtime", "invalid arguments: " + "; ".join(problems), started)
            secrets = {k: v for k, v in (secrets or {}).items() if k in info.secrets}
        request = Request(
            id=next(self._ids),
            source=source,
            params=dict(params),
            workspace=os.fspath(workspace),
            secrets=dict(secrets or {}),
            timeout_s=timeout,
            max_output=self.max_output,
            limits=self.limits.for_timeout(timeout),
            trace=self._trace is not None,
        )
        if self._trace is None:
            return await self._call(request, started)
        marks = [("runner_checked", time.perf_counter_ns())]
        return await self._call(request, started, (t0, marks))

    def helper_count(self) -> int:
        """Helpers running for workspaces (the spare not counted)."""
        return sum(1 for h in self._helpers.values() if not h.dead)

    def stages(self) -> list[dict[str, float]]:
        """With `trace=True`: for each call, milliseconds from the start of `run()` to
        the end of each stage (runner, helper and child marks, in time order)."""
        return list(self._trace or ())

    def _checked(self, source: str) -> ToolInfo | str:
        """Lint + format check, cached by source hash (tools are called repeatedly)."""
        key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest()
        hit = self._lint_cache.get(key)
        if hit is not None:
            return hit
        findings = lint(source)
        out: ToolInfo | str
        if findings:
            out = format_findings(findings)
        else:
            try:
                out = describe_tool(source)
            except ToolFormatError as exc:
                out = format_findings(exc.findings)
        if len(self._lint_cache) >= 256:
            self._lint_cache.pop(next(iter(self._lint_cache)))
        self._lint_cache[key] = out
        return out

    async def _call(
        self,
        request: Request,
        started: float,
        trace: tuple[int, list[tuple[str, int]]] | None = None,
    ) -> RunResult:
        data = encode_request(request)
        if len(data) > MAX_REQUEST:
            return _fail("runtime", f"the call is larger than {MAX_REQUEST} bytes", started)
        helper = await self._ensure(_domain(request.workspace))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Reply] = loop.create_future()
        helper.pending[request.id] = fut
        limit_s = request.timeout_s
        timer = loop.call_later(limit_s + GRACE_S, _expire, fut)
        try:
            await helper.send(data)
            if trace is not None:
                trace[1].append(("runner_sent", time.perf_counter_ns()))
            reply = await fut
        except ConnectionError:
            return _fail(
                "runtime",
                "the sandbox helper died during the call; it restarts on the next call",
                started,
            )
        except TimeoutError:
            log.error("sandbox helper missed a deadline; restarting it")
            helper.kill()
            return _fail("timeout", f"the tool ran longer than {limit_s:g} s", started)
        finally:
            timer.cancel()
            helper.pending.pop(request.id, None)
        if trace is not None and self._trace is not None:
            t0, marks = trace
            marks += reply.trace
            marks.append(("runner_done", time.perf_counter_ns()))
            marks.sort(key=lambda m: m[1])
            self._trace.append({name: (t - t0) / 1e6 for name, t in marks})
        return RunResult(
            ok=reply.ok,
            result=reply.result,
            error_kind=reply.error.kind if reply.error else None,
            error_message=reply.error.message if reply.error else "",
            duration_ms=reply.duration_ms,
            printed=reply.printed,
        )

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            helpers = [*self._helpers.values(), *([self._spare] if self._spare else [])]
            self._helpers.clear()
            self._spare = None
        await asyncio.gather(*(_shut(h) for h in helpers))


def _domain(workspace: str | os.PathLike[str]) -> str:
    """The isolation key of a call: its workspace, as spelled (pure, no I/O). Two
    spellings of one directory only cost a second helper; two tenants never share
    a workspace, so never a helper."""
    return os.path.normpath(os.fspath(workspace))


def _close_helper(helper: _Helper) -> None:
    if helper.stdin is not None:
        helper.stdin.close()  # EOF: the helper finishes its calls and exits


async def _shut(helper: _Helper) -> None:
    _close_helper(helper)
    try:
        await asyncio.wait_for(asyncio.shield(helper.exited), 5)
    except TimeoutError:
        helper.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(helper.exited), 5)
    if helper.transport is not None:
        helper.transport.close()


def _expire(fut: asyncio.Future[Reply]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())

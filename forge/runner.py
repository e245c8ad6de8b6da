"""SandboxRunner: the daemon-side async API to the sandbox helper processes.

    runner = SandboxRunner()
    await runner.start()            # spawns the helper, logs missing layers once
    res = await runner.run(source, {"path": "a.csv"}, workspace=Path(...))
    await runner.aclose()

Each `run` lints the source (layer 1), validates the arguments against the
schema derived from `run()`'s signature, and hands the call to a helper
(forge.helper_process), which compiles it (layer 2) and has a confined child
(layers 3 and 4) forked from its pristine zygote (forge.zygote). Each
workspace, that is each tenant, gets its own helper process (forge.helper_pool).
The child sends most outcomes straight back here, on the helper's answer socket
(forge.protocol.answers, forge.helper_process), one hop fewer than through the
helper. On the request side too: the helper lends the runner its waiting
children confined to its workspace, and the code of each tool it compiled
(forge.protocol.lending); a call whose code the runner holds and whose workspace
resolves to a lent child's directory (path, device, inode: the check the helper
makes) is written into that child here, and the helper told afterwards, off the
call's path (it then watches the child as one it handed the call itself). Any
other call goes through the helper, as before, with a lent child given back
for it.
`start()` starts one pristine spare helper (it probes the machine); the next
new workspace takes it and a new spare starts in the background. That first
helper is exec'd; the later ones are forked from the runner's helper template
(forge.template, forge.helper_fork), a process that has imported the helper's
code once, unless `fork_helpers` is False (then every helper is exec'd). A
template that fails is started again; after `TEMPLATE_TRIES` failures in a
row the runner execs its helpers. Several
calls may be in flight at once. If a helper dies
it is restarted and the calls it carried fail with kind "runtime"; a call that
outlives its deadline by a grace period restarts its helper too, and so does
a call whose caller is cancelled (a stopped turn, shutdown): the tool stops
at once (other calls that helper carried fail with kind "runtime"). A helper
whose zygote stopped answering retires (forge.worker): the calls it gives back,
which no child took, run once more in a new helper, with their whole time again
(their `net` requests' deadline with them).

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
import logging
import os
import stat
import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.confine.probe import missing
from forge.confine.sched import CALL_SLICE_NS, set_slice
from forge.findings import format_findings
from forge.helper_fork import HelperTemplate, TemplateError, fork_helper
from forge.helper_pool import MAX_HELPERS, Clock, HelperPool, Tick, workspace_key
from forge.helper_process import (
    HelperProcess,
    Unserved,
    close_lent,
    helper_argv,
    start_helper,
)
from forge.layers import Layers
from forge.lint import lint
from forge.net_call import NetBroker, NetCall, NetScope
from forge.net_rules import parse_hosts
from forge.protocol.answers import TOKEN_SIZE
from forge.protocol.calls import MAX_REQUEST, Hello, Reply, Request, encode_request
from forge.protocol.fields import CPU, FAULTS, ErrorKind
from forge.protocol.jobs import encode_job
from forge.protocol.lending import Lent, handed_frame
from forge.protocol.limits import Limits
from forge.protocol.net import MAX_NET_REQUEST, NetAnswer, NetAsk, encode_answer
from forge.schema import ToolFormatError, ToolInfo, describe_tool, validate_params

log = logging.getLogger(__name__)
GRACE_S = 3.0
TRACE_KEEP = 4096
LINT_CACHE_SIZE = 256
TEMPLATE_TRIES = 3  # failures of the helper template in a row before helpers are exec'd
UNSERVED = (
    "no sandbox process could be started: the sandbox zygote did not answer "
    "(stopped or stuck), in two helpers one after the other"
)
Trace = tuple[int, list[tuple[str, int]]]  # run() start (ns), the runner's marks


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

    @classmethod
    def of(cls, reply: Reply, started: float) -> RunResult:
        """The result of `reply` to a call `run()` began at `started` (monotonic): its
        duration is the runner's, whoever answered (a child's direct answer carries none)."""
        return cls(
            ok=reply.ok,
            result=reply.result,
            error_kind=reply.error.kind if reply.error else None,
            error_message=reply.error.message if reply.error else "",
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            printed=reply.printed,
        )


def _fail(kind: ErrorKind, message: str, started: float) -> RunResult:
    return RunResult(False, None, kind, message, round((time.monotonic() - started) * 1000, 3))


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
        broker: NetBroker | None = None,
        helper_idle_s: float | None = None,
        clock: Clock = time.monotonic,
        tick: Tick = asyncio.sleep,
        direct_answers: bool = True,
        warm_children: bool = True,
        short_slices: bool = True,
        idle_children: int | None = None,
        fork_helpers: bool = True,
        zygote_wait_s: float | None = None,
    ) -> None:
        """`layers_for_tests`: layers to switch off, for the layer tests only (None, the
        default, runs every layer; the helper takes them on its command line, so no
        request can switch a layer off). `trace`: keep per-stage timings of every call
        (`stages()`), for measurements only. `broker`: performs the `net` requests
        of tools (forge.broker; None: every `net` call fails). `helper_idle_s`: close
        a workspace's helper after that many seconds without a call (None: never);
        `clock` and `tick` time that (forge.helper_pool). `direct_answers` False: every
        outcome goes through the helper, one hop more (for measurements only).
        `warm_children` False: waiting children do not warm their call's path
        (forge.child; for measurements only). `short_slices` False: the helper and
        the child handed a call keep the default time slice (forge.confine.sched;
        for measurements only). `idle_children`: how many children each helper
        forks ahead of demand (None: forge.child_pool.IDLE_CHILDREN); each costs
        its preparation's copied pages while it waits. `fork_helpers` False: every
        helper is exec'd, none forked from the template (each then has an address
        layout of its own; docs/security.md). `zygote_wait_s`: how long a helper's
        zygote may stay silent while calls wait on it before that helper retires
        (None: forge.worker.ZYGOTE_WAIT_S, 3 s; shorter for tests that stop it)."""
        self.default_timeout_s = default_timeout_s
        self.max_output = max_output
        self.limits = limits or Limits()
        self.python = python
        self._layers = layers_for_tests or Layers()
        self._trace: deque[dict[str, float]] | None = deque(maxlen=TRACE_KEEP) if trace else None
        self._faults: deque[dict[str, int]] = deque(maxlen=TRACE_KEEP)
        self._cpu: deque[dict[str, int]] = deque(maxlen=TRACE_KEEP)
        self._pool = HelperPool(
            self._spawn, max_helpers, idle_s=helper_idle_s, clock=clock, tick=tick
        )
        self._caps: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._warned = False
        self._lint_cache: dict[bytes, ToolInfo | str] = {}
        self._broker = broker
        self._net: dict[int, NetCall] = {}  # request id -> its broker state
        self._direct = direct_answers
        self._warm = warm_children
        self._slices = short_slices
        self._children = idle_children
        self._zygote_wait_s = zygote_wait_s
        self._template = HelperTemplate(python) if fork_helpers else None
        self._template_failures = 0  # in a row
        self._started_one = False  # the first helper is exec'd, the later ones forked

    @property
    def max_helpers(self) -> int:
        return self._pool.max_helpers

    @property
    def helper_idle_s(self) -> float | None:
        return self._pool.idle_s

    async def start(self) -> None:
        await self._pool.start()

    async def _spawn(self) -> HelperProcess:
        max_reply = max(self.max_output * 2, MAX_NET_REQUEST) + (1 << 16)
        started = await self._fork(max_reply) if self._started_one else None
        if started is None:
            started = await start_helper(
                self.python,
                self._layers,
                max_reply,
                self._on_net,
                self._direct,
                self._warm,
                self._slices,
                self._children,
                self._zygote_wait_s,
            )
        self._started_one = True
        helper, hello = started
        self._caps = hello.capabilities
        if not self._warned:
            self._warned = True
            self._warn()
        return helper

    async def _fork(self, max_reply: int) -> tuple[HelperProcess, Hello] | None:
        """A helper forked from the template (started on its first use); None when
        there is no template or it failed (the caller execs one)."""
        template = self._template
        if template is None:
            return None
        argv = helper_argv(
            self._layers, self._warm, self._slices, self._children, self._zygote_wait_s
        )
        try:
            started = await fork_helper(template, argv, max_reply, self._on_net, self._direct)
        except TemplateError as exc:
            self._template_failures += 1
            if self._template_failures >= TEMPLATE_TRIES:
                self._template = None
                log.warning("%s; sandbox helpers are exec'd from now on", exc)
                await template.aclose()
            else:
                log.warning("%s; this helper is exec'd", exc)
            return None
        self._template_failures = 0
        return started

    @property
    def fork_helpers(self) -> bool:
        """Whether later helpers are forked from the template (False: configured off,
        or the template failed `TEMPLATE_TRIES` times in a row)."""
        return self._template is not None

    def template_pid(self) -> int | None:
        """The pid of the helper template (None: none runs)."""
        template = self._template
        return template.pid() if template is not None and template.running() else None

    def helpers_forked(self) -> int:
        """How many helpers this runner's templates forked."""
        return self._template.forks if self._template is not None else 0

    def _warn(self) -> None:
        """Log, once per runner, the layers switched off and those the machine lacks."""
        switched_off = self._layers.switched_off()
        if switched_off:
            log.warning("sandbox layers switched off (tests only): %s", switched_off)
        for name in self.missing_layers():
            log.warning(
                "sandbox layer unavailable on this machine: %s (%s)",
                name,
                self._caps[name].get("detail", ""),
            )

    def capabilities(self) -> dict[str, Any]:
        """What the machine offers, as probed by the helper at start."""
        return dict(self._caps)

    def missing_layers(self) -> list[str]:
        return missing(self._caps)

    def helper_pid(self, workspace: Path | None = None) -> int | None:
        """The pid of `workspace`'s helper (default: the one used last)."""
        helper = self._pool.known(workspace)
        return helper.pid() if helper else None

    def spare_pid(self) -> int | None:
        """The pid of the spare helper the next new workspace takes (None while it
        starts)."""
        spare = self._pool.spare()
        return spare.pid() if spare else None

    def zygote_pid(self, workspace: Path | None = None) -> int | None:
        """The pid of the zygote its children are forked from (default: last used)."""
        helper = self._pool.known(workspace)
        return helper.zygote_pid if helper else None

    async def run(
        self,
        source: str,
        params: Mapping[str, Any],
        workspace: Path,
        secrets: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        net: NetScope | None = None,
        write_bytes: int | None = None,
    ) -> RunResult:
        """Run `source`'s `run(**params)` in a fresh confined process. The child gets
        only the names of `secrets`; the values stay here, for the broker.
        `write_bytes`: a lower byte budget for what this call may write into its
        workspace (e.g. what is left of the tenant's quota); never above the
        runner's `limits.write_bytes`. Over it the call fails with kind `quota`."""
        started = time.monotonic()
        t0 = time.perf_counter_ns()
        timeout = self.default_timeout_s if timeout_s is None else timeout_s
        if self._layers.lint:
            checked = self._checked(source)
            if isinstance(checked, str):
                return _fail("lint", checked, started)
            problems = validate_params(checked.schema, dict(params))
            if problems:
                return _fail("runtime", "invalid arguments: " + "; ".join(problems), started)
            secrets = {k: v for k, v in (secrets or {}).items() if k in checked.secrets}
            network = checked.network
        else:
            network = ()
        secrets = dict(secrets or {})
        request = Request(
            id=next(self._ids),
            source=source,
            params=dict(params),
            workspace=os.fspath(workspace),
            secret_names=tuple(secrets),
            timeout_s=timeout,
            max_output=self.max_output,
            limits=self.limits.for_timeout(timeout).with_write_budget(write_bytes),
            trace=self._trace is not None,
            # the secret a direct answer of this call carries (forge.protocol.answers)
            token=os.urandom(TOKEN_SIZE) if self._direct else b"",
        )
        scope = net or NetScope()
        if self._broker is not None and scope.allowed:
            self._net[request.id] = self._broker.open_call(
                tool=scope.tool,
                network=parse_hosts(network),
                secrets=secrets,
                deadline=time.monotonic() + timeout,
                rate_key=workspace_key(workspace),
                on_http=scope.on_http,
            )
        try:
            if self._trace is None:
                return await self._call(request, started)
            marks = [("runner_checked", time.perf_counter_ns())]
            return await self._call(request, started, (t0, marks))
        finally:
            call = self._net.pop(request.id, None)
            if call is not None and self._broker is not None:
                await self._broker.close_call(call)

    def _on_net(self, helper: HelperProcess, ask: NetAsk) -> None:
        """A child's `net` request, relayed by its helper: the broker answers it."""
        call = self._net.get(ask.call)
        task = asyncio.ensure_future(self._answer(helper, call, ask))
        if call is not None:
            call.tasks.add(task)
            task.add_done_callback(call.tasks.discard)

    async def _answer(self, helper: HelperProcess, call: NetCall | None, ask: NetAsk) -> None:
        if call is None or self._broker is None:
            answer = NetAnswer(False, error="the network is not available to this tool")
        else:
            answer = await self._broker.fetch(call, ask.request)
        with contextlib.suppress(ConnectionError):
            await helper.send(encode_answer(ask.call, ask.seq, answer))

    def lent_children(self, workspace: Path) -> list[int]:
        """The pids of the children `workspace`'s helper has lent to this runner, that
        no call has taken yet and that are confined to the directory `workspace`
        names now, the only ones a call there can take (forge.protocol.lending)."""
        helper = self._pool.known(workspace)
        binding = _resolved(os.fspath(workspace))
        if helper is None or binding is None:
            return []
        return [child.pid for child in helper.lent if child.binding() == binding]

    def helper_count(self) -> int:
        """Helpers running for workspaces (the spare not counted)."""
        return self._pool.count()

    def faults(self) -> list[dict[str, int]]:
        """With `trace=True`: for each call (as `stages()`), the child's minor page
        faults counted at each of its stages: "forked" (right after the fork),
        "ready" (prepared, waiting for its call), then each stage of the call."""
        return list(self._faults)

    def cpu(self) -> list[dict[str, int]]:
        """With `trace=True`: for each call (as `faults()`), the child's CPU time so
        far (user and system, µs) at each of its stages."""
        return list(self._cpu)

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
        if len(self._lint_cache) >= LINT_CACHE_SIZE:
            self._lint_cache.pop(next(iter(self._lint_cache)))
        self._lint_cache[key] = out
        return out

    async def _call(
        self, request: Request, started: float, trace: Trace | None = None, again: bool = True
    ) -> RunResult:
        """One call in its workspace's helper; a call that helper gave back as it retired
        (`Unserved`: no child took it) runs `again`, once, in a new helper."""
        data = encode_request(request)
        if len(data) > MAX_REQUEST:
            return _fail("runtime", f"the call is larger than {MAX_REQUEST} bytes", started)
        key = workspace_key(request.workspace)
        helper = await self._pool.get(key)  # held until `release`: never reaped mid-call
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Reply] = loop.create_future()
        helper.expect(request.id, fut, request.token)
        limit_s = request.timeout_s
        timer = loop.call_later(limit_s + GRACE_S, _expire, fut)
        try:
            await helper.send(self._start(helper, request, data, trace))
            if trace is not None:
                trace[1].append(("runner_sent", time.perf_counter_ns()))
            reply = await fut
        except Unserved:
            if not again:
                return _fail("runtime", UNSERVED, started)
            reply = None
        except ConnectionError:
            msg = "the sandbox helper died during the call; it restarts on the next call"
            return _fail("runtime", msg, started)
        except TimeoutError:
            log.error("sandbox helper missed a deadline; restarting it")
            helper.kill()
            return _fail("timeout", f"the tool ran longer than {limit_s:g} s", started)
        except asyncio.CancelledError:
            helper.kill()  # the turn was stopped or cancelled: the running tool dies with it
            raise
        finally:
            timer.cancel()
            helper.forget(request.id)
            self._pool.release(key)
        if reply is None:  # given back: nothing of it ran
            log.warning("a sandbox helper retired (its zygote did not answer): a new one runs")
            call = self._net.get(request.id)
            if call is not None:  # its `net` requests get the call's whole time again, as it does
                call.deadline = time.monotonic() + limit_s
            return await self._call(request, started, trace, again=False)
        if trace is not None:
            self._record(trace, reply)
        return RunResult.of(reply, started)

    def _start(
        self, helper: HelperProcess, request: Request, data: bytes, trace: Trace | None
    ) -> bytes:
        """What starts `request` (its frame `data`) in `helper`: with the tool's code
        (compiled by that helper) and a child lent by it confined to the call's
        workspace, the call is written into that child here and the helper is only
        told (`handed_frame`); else the request itself, with a lent child given
        back for it, and asking for the code when the runner lacks it. Either says
        whether another call of that helper is in flight (`busy`)."""
        # another call of this helper in flight: its next children skip the warm-up
        busy = len(helper.pending) > 1
        if helper.lend is None:
            return encode_request(request, {"busy": True}) if busy else data
        digest = hashlib.sha256(request.source.encode("utf-8", "surrogatepass")).digest()
        code = helper.codes.get(digest)
        binding = _resolved(request.workspace) if helper.lent else None
        child = helper.take(binding) if binding is not None else None
        while child is not None and code is not None and binding is not None:
            try:
                at = self._hand(child, code, request, binding[0])
            except OSError:  # it died while waiting: another one
                helper.drop(child)
                child = helper.take(binding)
                continue
            close_lent(child)
            if trace is not None:
                trace[1].append(("runner_handed", time.perf_counter_ns()))
            drops = helper.take_drops()
            return handed_frame(
                request.id,
                child.pid,
                digest.hex(),
                at,
                request.timeout_s,
                request.max_output,
                request.trace,
                drops,
                busy,
            )
        extra: dict[str, Any] = {"busy": True} if busy else {}
        if child is not None:
            close_lent(child)
            extra["give"] = child.pid
        if code is None:
            extra["code"] = True
        drops = helper.take_drops()
        if drops:
            extra["drop"] = list(drops)
        return encode_request(request, extra) if extra else data

    def _hand(self, child: Lent, code: bytes, request: Request, workspace: str) -> float:
        """Write `request`'s job into lent `child` and wake it (as the helper's
        forge.child_pool `hand_over`); the monotonic time its deadline counts from
        (OSError: it died while waiting)."""
        job = memoryview(encode_job(code, request, workspace))
        offset = 0
        while offset < len(job):
            offset += os.pwrite(child.job, job[offset:], offset)
        if self._slices:
            set_slice(child.pid, CALL_SLICE_NS)
        at = time.monotonic()
        os.write(child.go, b"g")
        return at

    def _record(self, trace: Trace, reply: Reply) -> None:
        """Keep one call's stages: every mark in ms since `run()` began, in time order."""
        if self._trace is None:
            return
        t0, marks = trace
        marks += [m for m in reply.trace if not m[0].startswith((FAULTS, CPU))]
        marks.append(("runner_done", time.perf_counter_ns()))
        marks.sort(key=lambda m: m[1])
        self._trace.append({name: (t - t0) / 1e6 for name, t in marks})
        faults = {n.removeprefix(FAULTS): c for n, c in reply.trace if n.startswith(FAULTS)}
        self._faults.append(faults)
        self._cpu.append({n.removeprefix(CPU): c for n, c in reply.trace if n.startswith(CPU)})

    async def aclose(self) -> None:
        await self._pool.aclose()
        if self._template is not None:
            await self._template.aclose()


def _resolved(workspace: str) -> tuple[str, int, int] | None:
    """`workspace` as the helper resolves it for a call (forge.worker `job_data`): its
    real path, device and inode; None when it is relative (the helper's cwd is not
    ours) or no directory (the helper then answers the call as before)."""
    if not os.path.isabs(workspace):
        return None
    path = os.path.realpath(workspace)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return (path, st.st_dev, st.st_ino)


def _expire(fut: asyncio.Future[Reply]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())

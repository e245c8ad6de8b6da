"""What runs inside one forked sandbox child: confine, run the tool, report JSON bytes.

The helper forks a child *before* a call arrives (`child_main`). While idle the
child does only what is the same for every call: it arranges to die with the helper,
closes every descriptor it inherited except its own three, puts /dev/null on
stdin/stdout/stderr, empties its environment and builds a Landlock ruleset holding
the read-only roots, and builds the fresh globals of its one call (new builtins
dict, guards, import hook, print sink; the call adds its path-gated open, listdir
and secret handles; `net` is bound to its pipes). A child forked once its helper
knows its workspace (`Bound`, forge.zygote) also adds the workspace rule,
enforces Landlock and moves into the workspace while it waits. It then blocks
until the helper hands it exactly one call (a marshalled `Job` in a memfd, then
one byte on the "go" pipe), applies every per-call layer (the workspace rule and
Landlock enforcement unless done while waiting, cwd, closing descriptors,
rlimits), runs the tool, sends one
JSON document to the runner (straight, on the inherited answer socket, with the
call's token; forge.protocol.answers) or, when it is too large for one message,
as a length-prefixed frame to the helper on its result pipe, and calls os._exit. A child never
receives a second call: there is no loop, the memfd is closed as soon as the call is
written, and after the job the go pipe only ever carries the broker's answers to the
child's own `net` requests (which it writes as frames on its result pipe before its
outcome frame; forge.net_client). The child never holds a vault value: `secret()`
gives handles the broker fills in.

The result is serialised here, inside the child, so objects a tool returns (custom
__eq__, __repr__, endless iterators) never run code in the helper or the daemon;
only bytes leave. It is first copied into plain JSON data while the call still runs
(forge.child_report `plain`), and the collector is off from then on: no tool code
runs after the call's checks (the write budget's; the attacker pass atk1).
"""

from __future__ import annotations

import builtins
import csv
import gc
import json
import marshal
import os
import resource
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import IO, Any, NoReturn

from forge.child_report import (
    FRAMED_MEMORY_ERROR,
    NOT_JSON,
    NotPlain,
    describe,
    error,
    plain,
    serialise,
    tool_line,
)
from forge.confine.capabilities import drop_capabilities
from forge.confine.kernel import close_range, die_with_parent
from forge.confine.landlock import RulesetArgs, create_ruleset, landlock_restrict
from forge.confine.rlimits import apply_rlimits
from forge.confine.seccomp import SeccompFilter
from forge.layers import Layers
from forge.net_client import PipeChannel, make_net_module
from forge.pathgate import PathDenied, PathGate
from forge.policy.globals import (
    OutputTooLarge,
    PrintSink,
    bind_call,
    make_unrestricted_globals,
    prepare_globals,
)
from forge.policy.guards import JudgedModules
from forge.protocol.answers import DIRECT_DONE, DIRECT_MAX, encode_direct
from forge.protocol.calls import Request
from forge.protocol.fields import CPU, FAULTS
from forge.protocol.frames import frame
from forge.protocol.jobs import Job, decode_job, encode_job, success_doc
from forge.protocol.limits import Limits
from forge.shims import bind_shims
from forge.write_budget import WriteBudget, undo


@dataclass(frozen=True, slots=True)
class HelperContext:
    """Prepared once in the helper, inherited by every child."""

    proxies: dict[str, SimpleNamespace]
    devnull: int
    read_fds: tuple[int, ...]
    landlock_abi: int
    seccomp: SeccompFilter | None
    builtins: dict[str, Any]
    layers: Layers
    helper_pid: int
    answer_fd: int = -1  # this helper's end of the runner's answer socket; -1: none
    caps_dropped: bool = False  # the zygote emptied its capability sets (children inherit them)
    warm: bool = True  # a waiting child warms its call's path (`_warm`); False: measurements only
    ruleset: RulesetArgs | None = None  # a child's ruleset calls' arguments (None: no Landlock)
    judged: JudgedModules | None = None  # the proxies' attributes, judged once (policy.guards)
    warm_file: WarmFile | None = None  # a library file the warm-up reads (`_warm_reading`)
    # seccomp as a stacked pair (forge.confine.seccomp): the zygote's part, a child's part
    seccomp_pair: tuple[SeccompFilter, SeccompFilter] | None = None
    seccomp_stacked: bool = False  # the zygote installed its part: a child installs the rest


@dataclass(frozen=True, slots=True)
class WarmFile:
    """A regular file of a read-only root (forge.confine.landlock) that a waiting
    child's warm-up opens through a path gate and reads: `fd`, the root's O_PATH
    descriptor (one of `HelperContext.read_fds`, open until the call closes them),
    `root`, its path, and `name`, the file's name in it."""

    fd: int
    root: str
    name: str


@dataclass(frozen=True, slots=True)
class Bound:
    """The workspace a waiting child confines itself to before its call arrives:
    its path as the helper resolved it, and a descriptor of it (the zygote's)."""

    path: str
    fd: int


def _close_other_fds(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep):
        if fd > low:
            close_range(low, fd - 1)
        low = fd + 1
    close_range(low, 0xFFFFFFFF)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Stages:
    """perf_counter_ns marks of one child (CLOCK_MONOTONIC: comparable with the helper's
    and the runner's). Cheap enough to take always; sent only when the call asks.
    `faults(name)` marks the child's minor page faults and its CPU time so far
    (`FAULTS` + name: a count; `CPU` + name: µs of user and system time; not times
    of day: forge.runner keeps them apart)."""

    __slots__ = ("count", "marks")

    def __init__(self) -> None:
        self.marks: list[tuple[str, int]] = []
        self.count = False  # a traced call: every mark also marks the faults

    def __call__(self, name: str) -> None:
        self.marks.append((name, time.perf_counter_ns()))
        if self.count:
            self.faults(name)

    def faults(self, name: str) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.marks.append((FAULTS + name, usage.ru_minflt))
        self.marks.append((CPU + name, round((usage.ru_utime + usage.ru_stime) * 1e6)))


def _prepare(
    ctx: HelperContext, go_fd: int, job_fd: int, result_fd: int, bound: Bound | None
) -> int | None:
    """The layers that are the same for every call, applied before the call is known
    (so the child is already confined when the call's data reaches it): die with the
    helper, no inherited descriptors, /dev/null for stdio, empty environment, no
    capabilities, seccomp (the child's part of the stacked pair when the zygote
    installed its own part: forge.confine.seccomp; else the whole filter); with
    `bound`, Landlock with that workspace and cwd there.
    Returns this child's own Landlock ruleset with the read-only roots (the
    workspace is added per call), or None (none, or enforced already)."""
    die_with_parent(ctx.helper_pid)
    gc.freeze()  # the collector never walks (and so never copies) the helper's objects
    for std in (0, 1, 2):
        os.dup2(ctx.devnull, std)
    # Other children's pipes and memfds, the helper's protocol pipes: gone now.
    ws = (bound.fd,) if bound is not None else ()
    _close_other_fds({0, 1, 2, go_fd, job_fd, result_fd, *ctx.read_fds, *_answers(ctx), *ws})
    if os.environ:  # the zygote emptied it already
        os.environ.clear()
    ruleset = None
    if ctx.layers.landlock and ctx.landlock_abi:
        if ctx.ruleset is None:
            raise RuntimeError("the Landlock ruleset's arguments were not prepared")
        ruleset = create_ruleset(ctx.ruleset)
        if bound is not None:
            landlock_restrict(ctx.landlock_abi, ruleset, bound.fd, ctx.ruleset)
            ruleset = None
    if bound is not None:
        os.fchdir(bound.fd)
    if ctx.layers.drop_caps and os.geteuid() == 0 and not ctx.caps_dropped:
        drop_capabilities()
    if ctx.layers.seccomp and ctx.seccomp is not None:
        if ctx.seccomp_stacked and ctx.seccomp_pair is not None:
            ctx.seccomp_pair[1].install()  # over the zygote's part: the whole filter
        else:
            ctx.seccomp.install()
    return ruleset


def _answers(ctx: HelperContext) -> tuple[int, ...]:
    return (ctx.answer_fd,) if ctx.answer_fd >= 0 else ()


def _await_job(go_fd: int, job_fd: int) -> Job:
    """Block until the helper hands over this child's one call; exit if it never does."""
    try:
        go = os.read(go_fd, 1)
    except OSError:
        go = b""
    if go != b"g":  # the helper closed the pipe (shutdown or death): no call
        os._exit(0)
    size = os.fstat(job_fd).st_size
    data = os.pread(job_fd, size, 0)  # a memfd is read whole at once
    while len(data) < size:
        chunk = os.pread(job_fd, size - len(data), len(data))
        if not chunk:
            break
        data += chunk
    os.close(job_fd)  # the go pipe stays: the broker's answers to `net` calls arrive there
    return decode_job(data)


def _confine(
    job: Job,
    ctx: HelperContext,
    ruleset: int | None,
    fds: tuple[int, int],
    mark: _Stages,
    bound: Bound | None,
) -> int:
    """The per-call layers: Landlock with this call's workspace and cwd (unless the
    child did both while it waited, `bound`), descriptors, rlimits (capabilities and
    seccomp are already in place, see `_prepare`)."""
    if bound is not None:
        if job.workspace != bound.path:  # the helper never asks it (forge.child_pool)
            raise RuntimeError("the call's workspace is not the one this child is confined to")
        ws_fd = bound.fd
    else:
        ws_fd = os.open(job.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if ctx.layers.landlock and ctx.landlock_abi:
            if ruleset is None:
                raise RuntimeError("the Landlock ruleset was not prepared")
            landlock_restrict(ctx.landlock_abi, ruleset, ws_fd, ctx.ruleset)
            mark("landlock")
        os.fchdir(ws_fd)
    _close_other_fds({0, 1, 2, *fds, ws_fd, *_answers(ctx)})
    mark("fds")
    if ctx.layers.rlimits:
        apply_rlimits(job.limits)
        mark("rlimits")
    return ws_fd


@dataclass(slots=True)
class CallGlobals:
    """A call's globals: everything that does not depend on the call (new builtins
    dict, guards, import hook, print sink). Built once in the zygote, which never
    runs a call (`prepare_call_globals`); each child's copy-on-write copy of them is
    its one call's own, bound to its pipes (`bind`), and never reused: the child
    runs one call and exits."""

    globals: dict[str, Any]
    sink: PrintSink
    proxies: _CallProxies | None = None

    def bind(self, go_fd: int, result_fd: int) -> None:
        """This child's pipes, for the call's `net` proxy."""
        if self.proxies is not None:
            self.proxies.bind(go_fd, result_fd)


class _CallProxies(Mapping[str, SimpleNamespace]):
    """The module proxies of this child's one call: the helper's, and its own `net`
    (bound to its pipes), made on the call's first `import net` (most tools have
    none, and making it is dear in a fresh child: every object it touches is a
    page copied)."""

    def __init__(self, shared: Mapping[str, SimpleNamespace], go_fd: int, result_fd: int) -> None:
        self._shared = shared
        self._fds = (result_fd, go_fd)
        self._net: SimpleNamespace | None = None

    def bind(self, go_fd: int, result_fd: int) -> None:
        self._fds = (result_fd, go_fd)

    def __getitem__(self, name: str) -> SimpleNamespace:
        if name != "net":
            return self._shared[name]
        if self._net is None:
            self._net = make_net_module(PipeChannel(*self._fds).ask)
        return self._net

    def __contains__(self, name: object) -> bool:
        return name == "net" or name in self._shared

    def __iter__(self) -> Iterator[str]:
        yield from self._shared
        if "net" not in self._shared:
            yield "net"

    def __len__(self) -> int:
        return len(self._shared) + ("net" not in self._shared)


def prepare_call_globals(ctx: HelperContext, template: dict[str, Any] | None = None) -> CallGlobals:
    """A call's globals, not yet bound to a child's pipes. In the zygote, `template`
    None: the zygote's own copy of the helper's builtins template becomes the
    builtins dict that every child then holds its own copy-on-write copy of (the
    zygote never runs a call, and the helper's template stays as it is)."""
    sink = PrintSink(0)  # the call sets the cap
    if not ctx.layers.restricted:
        return CallGlobals(make_unrestricted_globals(), sink)
    proxies = _CallProxies(ctx.proxies, -1, -1)
    builtins_ = ctx.builtins if template is None else template
    glb = prepare_globals(builtins_, proxies, sink, owned=True, modules=ctx.judged)
    return CallGlobals(glb, sink, proxies)


def _run_tool(
    job: Job, ctx: HelperContext, pre: CallGlobals, ws_fd: int, mark: _Stages
) -> dict[str, Any]:
    sink = pre.sink
    sink.cap = job.max_output
    glb = pre.globals
    budget = WriteBudget(job.limits.write_bytes, job.limits.file_size)
    gate = None
    if ctx.layers.restricted:
        gate = PathGate(job.workspace, dir_fd=ws_fd, resolved=True, budget=budget)
        opener = gate.open if ctx.layers.gate else builtins.open
        bind_call(glb, opener, gate.listdir, job.secret_names)
        bind_shims(glb, gate)
    mark("globals")
    doc = _call(job, glb, sink)
    # No tool code after this point, before or after the checks: `doc` holds only
    # plain data (`_finished`), and the collector never runs again in this child
    # (a tool generator's `finally` would run when collected: the attacker pass atk1).
    gc.disable()
    mark("ran")
    if budget.exceeded and gate is not None:
        # over the write budget, whatever the tool did with the error: nothing half-written
        return error("quota", budget.message(undo(budget, gate)))
    return doc


def _call(job: Job, glb: dict[str, Any], sink: PrintSink) -> dict[str, Any]:
    try:
        exec(job.code, glb)
        run = glb.get("run")
        if not callable(run):
            return error("runtime", "the tool defines no run() function")
        result = run(**job.params)
    except PathDenied as exc:
        return error("denied", f"{exc}{tool_line(exc)}")
    except OutputTooLarge as exc:
        return error("output", str(exc))
    except MemoryError:
        glb.clear()
        return error("memory", "the tool ran out of memory")
    except BaseException as exc:
        return error("runtime", describe(exc))
    return _finished(result, sink.text())


def _finished(result: Any, printed: str) -> dict[str, Any]:
    """The document of a call that returned `result`: a plain copy of it, made now,
    while the call still runs (before the write budget's check), so serialising it
    later runs no tool code (`json.dumps` called a dict subclass's `items()`)."""
    try:
        data = plain(result)
    except MemoryError:
        return error("memory", "the tool ran out of memory")
    except (NotPlain, RecursionError) as exc:
        why = str(exc) if isinstance(exc, NotPlain) else describe(exc)
        return error("output", f"{NOT_JSON} ({why})")
    return success_doc(data, printed)


def rehearse(ctx: HelperContext, job: Job, ws_fd: int) -> bytes:
    """What a child does for `job` once it is confined, done here and now, unconfined:
    for forge.rehearsal only (forge's own tool, in the helper before its zygote
    forks), never for a call. Returns the serialised outcome."""
    pre = prepare_call_globals(ctx, dict(ctx.builtins))  # the template stays untouched
    collecting = gc.isenabled()
    try:
        doc = _run_tool(job, ctx, pre, ws_fd, _Stages())
    finally:
        if collecting:
            gc.enable()  # `_run_tool` turns the collector off, as a child's last call
    return serialise(doc, job.max_output)


def _answer_direct(answer_fd: int, job: Job, doc: bytes) -> bool:
    """Send the outcome `doc` straight to the runner, as one message (forge.protocol.
    answers); False when it must go through the helper instead (no socket or token,
    too large, or the write failed: the runner's end is gone)."""
    if answer_fd < 0 or not job.token or len(doc) > DIRECT_MAX:
        return False
    message = encode_direct(job.call_id, job.token, doc)
    try:
        return os.write(answer_fd, message) == len(message)
    except OSError:
        return False


# the "ready" mark of a child whose warm-up left out the reading path (traced calls)
READY_NOT_READING = "ready_not_reading"
# and of a child that did not warm up at all (asked while its helper's calls overlap)
READY_COLD = "ready_cold"
# A job like a call's, decoded by every child while it waits (`_warm`), never run.
WARM_SECRET = "forge_warm_up"  # the secret name it declares (no call sees it: tests/forge)
WARM_READ = 1 << 12  # bytes the warm-up asks of its (still empty) job memfd
_WARM_JOB = encode_job(
    marshal.dumps(compile("def run(n):\n    return n\n", "<tool>", "exec")),
    Request(0, "", {"n": 1}, "/", (WARM_SECRET,), 5.0, 1 << 16, Limits(), token=bytes(16)),
    "/",
)
_WARM_DOC = success_doc({"n": 1, "x": [1.5, "y", None, True]}, "")


def _warm(ctx: HelperContext, job_fd: int, pre: CallGlobals | None = None) -> None:
    """What every call does first, done while this child waits for its call, on
    constants, with nothing kept: read its (empty) job memfd, decode a job, make a
    write budget, bind a path gate's globals in a scratch dict, serialise an
    outcome and its direct answer.
    Each copies the pages it writes (refcounts, allocator pools; forge.rehearsal),
    so the call that follows finds them copied already: the same work, moved off
    the call's path, and about as many pages in all. With `pre` (the call's
    globals), also the reading path most tools take (`_warm_reading`). Nothing
    here can fail the call (errors are ignored; tests/forge/test_warm_child.py
    shows it ran)."""
    try:
        os.fstat(job_fd)
        # the memfd is empty while the child waits (a job written already is read
        # again whole for the call), but the buffer is the child's first allocation
        # outside pymalloc, which alone copied 15-18 pages (glibc's arena) on the call's path
        os.pread(job_fd, WARM_READ, 0)
        job = decode_job(_WARM_JOB)
        budget = WriteBudget(job.limits.write_bytes, job.limits.file_size)
        if ctx.layers.restricted:
            # not a copy of the builtins: that would write every builtin's refcount
            scratch = {"__builtins__": {"__import__": ctx.builtins["__import__"]}}
            # stdin is /dev/null: nothing is opened through this gate (ctx.devnull is
            # closed in a child; its number was often the ruleset's by then)
            gate = PathGate(job.workspace, dir_fd=0, resolved=True, budget=budget)
            bind_call(scratch, gate.open, gate.listdir, job.secret_names)
            bind_shims(scratch, gate)
        encode_direct(job.call_id, job.token, serialise(_WARM_DOC, job.max_output))
        if pre is not None and ctx.layers.restricted:
            _warm_reading(pre.globals, ctx.warm_file)
    except Exception:
        return


def _warm_reading(glb: dict[str, Any], where: WarmFile | None) -> None:
    """The reading path most tools take, walked while the child waits, on constants
    and the call's own guards (`glb`, never changed; tests/forge/test_warm_reading.py):
    a csv.DictReader's rows from a list, the guards' lookups and writes on plain
    dicts as a tool's loop makes them, then a text file opened through a path gate
    and read line by line: `where`, a library file (nothing of the workspace's; its
    gate is its own, with no write budget), or without one (no read-only roots)
    stdin, which is /dev/null (the io stack only). A CSV call (bench.sandbox) then
    copied about 75 pages fewer after it arrived (150 -> 75; its tool stage 115 ->
    43 in bench.sandbox_steps, 0.2 ms of CPU less), its child about 70 more while
    it waited: the same in all for that call, and 70 more for a call that reads
    nothing (a trivial tool's: the price of moving the others off the path)."""
    getattr_ = glb["_getattr_"]
    write_ = glb["_write_"]
    totals: dict[str, float] = {}
    for row in csv.DictReader(["a,b", "1,2"]):
        for key, value in getattr_(row, "items")():
            write_(totals)[key] = getattr_(totals, "get")(key, 0) + float(value)
    with _warm_text(where) as f:
        for _line in f:
            pass


def _warm_text(where: WarmFile | None) -> IO[Any]:
    """`where` opened through its own path gate, for reading; stdin without it."""
    if where is None:
        return open(0, encoding="utf-8", newline="", closefd=False)
    return PathGate(where.root, dir_fd=where.fd, resolved=True).open(where.name, newline="")


def child_main(
    ctx: HelperContext,
    go_fd: int,
    job_fd: int,
    result_fd: int,
    pre: CallGlobals | None = None,
    bound: Bound | None = None,
    reading: bool = True,
    warm: bool = True,
) -> NoReturn:
    """Entry point right after fork, before the call is known; never returns. `pre`:
    the call's globals as the zygote built them (None: built here); `bound`: the
    workspace it confines itself to while it waits (None: when its call arrives);
    `reading` False: the warm-up leaves out the reading path (`_warm_reading`: its
    helper's recent calls read no file, forge.child_pool `ReadingHint`); `warm`
    False: no warm-up at all (`_warm`: its helper's calls overlap, so the cores are
    busy and the warm-up's own work would only add to theirs; forge.child_pool)."""
    mark = _Stages()
    mark.faults("forked")
    trace = False
    try:
        try:
            ruleset = _prepare(ctx, go_fd, job_fd, result_fd, bound)
            call = pre if pre is not None else prepare_call_globals(ctx, dict(ctx.builtins))
            call.bind(go_fd, result_fd)
        except BaseException as exc:
            setup_error: BaseException | None = exc
        else:
            setup_error = None
            if ctx.warm and warm:
                _warm(ctx, job_fd, call if reading else None)
        mark.faults("ready")
        if ctx.warm and not warm:
            mark.faults(READY_COLD)  # a traced call shows it (tests/forge)
        elif ctx.warm and not reading:
            mark.faults(READY_NOT_READING)
        job = _await_job(go_fd, job_fd)
        trace = mark.count = job.trace
        mark("job")
        try:
            if setup_error is not None:
                raise setup_error
            ws_fd = _confine(job, ctx, ruleset, (go_fd, result_fd), mark, bound)
        except BaseException as exc:
            data = json.dumps(error("runtime", f"sandbox setup failed: {exc}")).encode()
        else:
            data = serialise(_run_tool(job, ctx, call, ws_fd, mark), job.max_output)
        if trace:
            mark("serialised")
            marks = [*job.marks, *mark.marks]  # the helper's, then this child's
            data = data[:-1] + b',"trace":' + json.dumps(marks).encode() + b"}"
        if _answer_direct(ctx.answer_fd, job, data):
            _write_all(result_fd, DIRECT_DONE)
        else:
            _write_all(result_fd, frame(data))
        os.close(result_fd)
    except MemoryError:
        try:
            _write_all(result_fd, FRAMED_MEMORY_ERROR)
        except BaseException:
            os._exit(3)
    except BaseException:
        os._exit(4)
    os._exit(0)

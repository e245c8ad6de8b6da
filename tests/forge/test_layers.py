"""Second layers: switch one layer off and show the next one still blocks.

- lint off -> RestrictedPython compile and the run-time guards refuse.
- lint and RestrictedPython off (plain compile, full builtins, `import os`
  works) -> the process layers: Landlock, seccomp, dropped capabilities, rlimits.
- the path gate off (plain `open`) -> Landlock refuses paths outside the workspace.
- seccomp off -> Landlock still refuses TCP connect (ABI >= 4).
A test whose layer this machine lacks is skipped with the reason, never passed.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest
import pytest_asyncio

from forge import helper_process
from forge.layers import Layers
from forge.protocol import calls, frames
from forge.protocol.limits import Limits
from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S, until

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _runner(layers: Layers) -> SandboxRunner:
    r = SandboxRunner(layers_for_tests=replace(layers, lint=False))
    await r.start()
    return r


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def no_lint() -> AsyncIterator[SandboxRunner]:
    r = await _runner(Layers())
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def raw_python() -> AsyncIterator[SandboxRunner]:
    r = await _runner(Layers(restricted=False))
    yield r
    await r.aclose()


def _need(r: SandboxRunner, layer: str) -> None:
    if not r.capabilities().get(layer, {}).get("available"):
        pytest.skip(f"this machine lacks {layer}: {r.capabilities().get(layer)}")


@pytest.mark.parametrize(
    "src",
    [
        tool("g = (i for i in [1])\nreturn g.gi_frame"),
        tool("try:\n    pass\nexcept* Exception:\n    pass"),
        tool("return 1") + "\ndef f(_getattr_, /):\n    return 1\n",
        tool("return ().__class__"),
        tool("return eval('1')"),
        tool("return 1", imports="import os as _os"),
    ],
)
async def test_compile_refuses_without_lint(
    no_lint: SandboxRunner, workspace: Path, src: str
) -> None:
    res = await no_lint.run(src, {}, workspace)
    assert res.error_kind == "compile", (res.error_kind, res.error_message)


@pytest.mark.parametrize(
    ("body", "imports"),
    [
        ("return os.system('id')", "import os"),
        ("return str(Formatter)", "from string import Formatter"),
        ("return getattr(1, 'real')", ""),
        (
            "try:\n    json.nothing\nexcept AttributeError as e:\n    return str(e.obj)",
            "import json",
        ),
        ("return str(statistics.sys)", "import statistics"),
    ],
)
async def test_guards_refuse_without_lint(
    no_lint: SandboxRunner, workspace: Path, body: str, imports: str
) -> None:
    res = await no_lint.run(tool(body, imports=imports), {}, workspace)
    assert res.error_kind == "runtime", (res.error_kind, res.error_message)
    assert any(w in res.error_message for w in ("ImportError", "NameError", "AttributeError"))


async def test_landlock_stops_writes_outside(raw_python: SandboxRunner, workspace: Path) -> None:
    _need(raw_python, "landlock")
    target = workspace.parent / "escaped.txt"
    body = f"open({str(target)!r}, 'w').write('x')"
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.error_kind == "runtime" and "PermissionError" in res.error_message
    assert not target.exists()


async def test_landlock_stops_reads_outside(raw_python: SandboxRunner, workspace: Path) -> None:
    _need(raw_python, "landlock")
    res = await raw_python.run(tool("return open('/etc/passwd').read()"), {}, workspace)
    assert res.error_kind == "runtime" and "PermissionError" in res.error_message


async def test_raw_python_can_still_use_workspace(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    body = "open('ok.txt', 'w').write('fine')\nreturn open('ok.txt').read()"
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.ok and res.result == "fine"


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("fork bomb", "import os\nreturn os.fork()"),
        ("shell", "import subprocess\nreturn subprocess.run(['id']).returncode"),
        ("socket", "import socket\nreturn str(socket.socket())"),
        ("symlink", "import os\nos.symlink('/etc/passwd', 'l')\nreturn 1"),
        ("hard link", "import os\nos.link('/etc/passwd', 'h')\nreturn 1"),
        ("kill helper", "import os\nos.kill(os.getppid(), 9)\nreturn 1"),
    ],
)
async def test_process_layers_without_restricted_python(
    raw_python: SandboxRunner, workspace: Path, name: str, body: str
) -> None:
    _need(raw_python, "seccomp")
    assert (await raw_python.run(tool("return 1"), {}, workspace)).ok
    pids = raw_python.helper_pid(workspace), raw_python.zygote_pid(workspace)
    res = await raw_python.run(tool(body), {}, workspace)
    assert not res.ok and res.error_kind == "runtime", (name, res)
    assert any(w in res.error_message for w in ("PermissionError", "BlockingIOError", "OSError"))
    assert (raw_python.helper_pid(workspace), raw_python.zygote_pid(workspace)) == pids
    assert os.listdir(workspace) == []


@pytest.mark.parametrize(
    "call",
    [
        "os.chmod(T, 0o666)",
        "os.chmod(T, 0o666, follow_symlinks=False)",
        "os.chown(T, 0, 0)",
        "os.lchown(T, 0, 0)",
        "os.utime(T, (0, 0))",
        "os.utime(T, (0, 0), follow_symlinks=False)",
        "os.setxattr(T, 'user.x', b'1')",
        "os.removexattr(T, 'user.x')",
        "os.chmod('..', 0o777)",
        "os.chmod('mine.txt', 0o777)",  # its own file too: a tool is offered no chmod
        "fd = os.open('mine.txt', os.O_RDONLY)\nos.fchmod(fd, 0o777)",
    ],
)
async def test_no_metadata_changes_without_restricted_python(
    raw_python: SandboxRunner, workspace: Path, call: str
) -> None:
    """Session 30's attacker pass: Landlock governs contents and names only, so a child
    whose Python broke out changed the mode, owner, times and attributes of files
    outside its workspace (`roost.db` 0600 -> 0666 would have been next)."""
    _need(raw_python, "seccomp")
    target = workspace.parent / "victim.db"
    target.write_text("private")
    target.chmod(0o600)
    os.utime(target, (1_700_000_000, 1_700_000_000))
    before = target.stat()
    (workspace / "mine.txt").write_text("x")
    parent_mode = workspace.parent.stat().st_mode
    body = f"import os\nT = {str(target)!r}\n{call}\nreturn 1"
    res = await raw_python.run(tool(body), {}, workspace)
    assert not res.ok and "PermissionError" in res.error_message, (call, res)
    after = target.stat()
    assert (after.st_mode, after.st_uid, after.st_mtime) == (
        before.st_mode,
        before.st_uid,
        before.st_mtime,
    )
    assert workspace.parent.stat().st_mode == parent_mode
    (workspace / "mine.txt").unlink()


async def test_touch_still_sets_the_time_of_an_open_file(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """`Path.touch` of the gate sets times through the descriptor it opened
    (utimensat with no path): still allowed."""
    _need(raw_python, "seccomp")
    (workspace / "old.txt").write_text("x")
    os.utime(workspace / "old.txt", (1_000_000, 1_000_000))
    body = "import os\nfd = os.open('old.txt', os.O_WRONLY)\nos.utime(fd)\nreturn 1"
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.ok, res
    assert (workspace / "old.txt").stat().st_mtime > 1_000_000
    (workspace / "old.txt").unlink()


async def test_system_exit_and_evil_results(raw_python: SandboxRunner, workspace: Path) -> None:
    res = await raw_python.run(tool("raise SystemExit(0)"), {}, workspace)
    assert res.error_kind == "runtime" and "SystemExit" in res.error_message
    evil = (
        tool("return [Evil()]")
        + "\nclass Evil:\n    def __repr__(self):\n        while True:\n            pass\n"
        "    def __eq__(self, other):\n        raise SystemExit(1)\n"
    )
    res = await raw_python.run(evil, {}, workspace, timeout_s=HANG_S)  # JSON fails at once
    assert res.error_kind == "output" and "JSON" in res.error_message


async def test_gate_off_landlock_on(workspace: Path) -> None:
    r = await _runner(Layers(gate=False))
    try:
        _need(r, "landlock")
        target = workspace.parent / "gate_off.txt"
        body = f"open({str(target)!r}, 'w').write('x')"
        res = await r.run(tool(body), {}, workspace)
        assert res.error_kind == "runtime" and "PermissionError" in res.error_message
        assert not target.exists()
    finally:
        await r.aclose()


async def test_seccomp_off_landlock_blocks_tcp(workspace: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    r = await _runner(Layers(restricted=False, seccomp=False))
    try:
        _need(r, "landlock_network")
        body = f"import socket\ns = socket.socket()\ns.connect(('127.0.0.1', {port}))\nreturn 1"
        res = await r.run(tool(body), {}, workspace)
        assert res.error_kind == "runtime" and "PermissionError" in res.error_message
    finally:
        await r.aclose()
        server.close()


async def test_workspace_rule_never_carries_over(raw_python: SandboxRunner, tmp_path: Path) -> None:
    """Children are forked before their call is known and each builds its own Landlock
    ruleset: alternating workspaces, a call can write only its own, never the previous
    call's (a ruleset shared between children would collect both)."""
    _need(raw_python, "landlock")
    a, b = tmp_path / "ws_a", tmp_path / "ws_b"
    a.mkdir()
    b.mkdir()
    for round_ in range(3):
        for own, other in ((a, b), (b, a)):
            body = (
                f"open('mine{round_}.txt', 'w').write('ok')\n"
                "try:\n"
                f"    open({str(other / 'stolen.txt')!r}, 'w').write('x')\n"
                "except PermissionError:\n"
                "    return 'denied'\n"
                "return 'escaped'"
            )
            res = await raw_python.run(tool(body), {}, own)
            assert res.ok and res.result == "denied", (own, res)
            assert (own / f"mine{round_}.txt").read_text() == "ok"
            assert not (other / "stolen.txt").exists()


async def test_every_call_gets_its_own_child(raw_python: SandboxRunner, workspace: Path) -> None:
    body = "import os\nreturn [os.getpid(), os.getppid()]"
    pids = []
    for _ in range(8):
        res = await raw_python.run(tool(body), {}, workspace)
        assert res.ok, res
        pids.append(res.result[0])
        # forked from the pristine zygote, never from the helper that read requests
        assert res.result[1] == raw_python.zygote_pid(workspace)
        assert res.result[1] != raw_python.helper_pid(workspace)
    assert len(set(pids)) == len(pids) and raw_python.helper_pid(workspace) not in pids


def _helper_children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


async def test_waiting_children_die_with_the_helper(workspace: Path) -> None:
    r = SandboxRunner()
    await r.start()
    try:
        res = await r.run(tool("return 1"), {}, workspace)
        assert res.ok
        pid, zygote = r.helper_pid(workspace), r.zygote_pid(workspace)
        assert pid is not None and zygote is not None
        assert _helper_children(pid) == [zygote]
        # the helper has the zygote fork waiting children when idle
        await until(lambda: _helper_children(zygote), "children waiting for calls")
        waiting = _helper_children(zygote)
        os.kill(pid, signal.SIGKILL)
        await until(lambda: not any(_alive(c) for c in [zygote, *waiting]), "all of them gone")
    finally:
        await r.aclose()


async def test_a_request_cannot_switch_layers_off(workspace: Path) -> None:
    """Layer switches are read once from the helper's command line (tests only);
    the production helper ignores any "layers" a request carries."""
    reply = await asyncio.to_thread(_ask_production_helper, workspace)
    assert reply["id"] == 1 and reply["ok"] is False
    assert reply["error"]["kind"] == "compile"


def _read_frame(stream: IO[bytes]) -> dict[str, object]:
    (size,) = frames.HEADER.unpack(stream.read(frames.HEADER.size))
    doc: dict[str, object] = json.loads(stream.read(size))
    return doc


def _ask_production_helper(workspace: Path) -> dict[str, object]:
    boot = helper_process.boot()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", boot, helper_process.PROJECT_ROOT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=helper_process.HELPER_ENV,
        cwd="/",
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert _read_frame(proc.stdout)["op"] == "hello"
        off = {k: False for k in Layers.__slots__}
        request = calls.Request(
            id=1,
            source="def run():\n    return str(().__class__)\n",
            params={},
            workspace=str(workspace),
            secret_names=(),
            timeout_s=HANG_S,
            max_output=1 << 20,
            limits=Limits(),
        )
        doc = json.loads(calls.encode_request(request)[frames.HEADER.size :])
        proc.stdin.write(frames.frame(json.dumps({**doc, "layers": off}).encode()))
        proc.stdin.flush()
        return _read_frame(proc.stdout)
    finally:
        proc.stdin.close()
        proc.wait(timeout=HANG_S)
        proc.stdout.close()


async def test_the_zygote_and_its_children_hold_no_capabilities(workspace: Path) -> None:
    """Root's capabilities are dropped once, in the zygote, before its first fork:
    every child inherits the empty sets (the layers that would stop reading /proc
    are switched off to look)."""
    if os.geteuid() != 0:
        pytest.skip("capabilities are dropped only when the sandbox runs as root")
    r = await _runner(Layers(restricted=False, gate=False, landlock=False))
    try:
        body = (
            "import re\n"
            "status = open('/proc/self/status').read()\n"
            "return re.findall(r'Cap(?:Inh|Prm|Eff):\\s*(\\w+)', status)"
        )
        res = await r.run(tool(body), {}, workspace)
        assert res.ok and res.result == ["0000000000000000"] * 3, res
        zygote = r.zygote_pid(workspace)
        assert zygote is not None and _cap_sets(zygote) == ["0000000000000000"] * 3
        helper = r.helper_pid(workspace)
        assert helper is not None and _cap_sets(helper)[2] != "0000000000000000"  # it keeps them
    finally:
        await r.aclose()


def _cap_sets(pid: int) -> list[str]:
    """The inheritable, permitted and effective capability sets of `pid`."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return [line.split()[1] for line in status if line[:6] in ("CapInh", "CapPrm", "CapEff")]


async def test_the_child_that_runs_the_call_has_its_rlimits(workspace: Path) -> None:
    """The rlimits are set in the child that runs the code, from the call's limits
    (the layers that would stop reading /proc are switched off to look)."""
    r = await _runner(Layers(restricted=False, gate=False, landlock=False))
    try:
        body = "return open('/proc/self/limits').read().splitlines()"
        res = await r.run(tool(body), {}, workspace, timeout_s=3.0, write_bytes=1000)
        assert res.ok, res
        rows = {line[:26].strip(): line[26:].split()[:2] for line in res.result[1:]}
        lim = Limits()
        assert rows["Max cpu time"] == ["4", "5"]  # timeout + 1 s, hard one more
        assert rows["Max processes"] == ["0", "0"]
        assert rows["Max core file size"] == ["0", "0"]
        assert rows["Max open files"] == [str(lim.open_files)] * 2
        assert rows["Max file size"] == [str(lim.file_size)] * 2
        assert rows["Max address space"] == [str(lim.address_space)] * 2
    finally:
        await r.aclose()


# The attacker pass after session 30: a broken-out child (plain Python with ctypes) changed
# the daemon's rlimits, nice value, policy and I/O priority, left System V shared
# memory behind, watched other tenants' directories with inotify and signalled the
# daemon with rt_sigqueueinfo where Landlock does not scope signals. Each call below
# aims at this test process (the daemon's place) with values that change nothing, so
# a run without the filter's rules fails the test and harms nothing.
_ATTEMPT = """import os, resource
out = {}
def attempt(name, f):
    try:
        f()
        out[name] = 'done'
    except OSError as e:
        out[name] = type(e).__name__
"""


def _capless_sleeper() -> subprocess.Popen[bytes]:
    """A process of this user without capabilities: the kernel lets a process change
    the nice value, policy or I/O priority only of one whose permitted capabilities
    are a subset of its own (a daemon running without them, as the attacker's)."""
    cmd = ["sleep", str(HANG_S * 4)]
    if os.geteuid() == 0:
        cmd = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *cmd]
    return subprocess.Popen(cmd)


def _process_state(pid: int) -> tuple[object, ...]:
    return (
        resource.prlimit(pid, resource.RLIMIT_NOFILE),
        resource.prlimit(pid, resource.RLIMIT_CPU),
        resource.prlimit(pid, resource.RLIMIT_FSIZE),
        os.getpriority(os.PRIO_PROCESS, pid),
        os.sched_getscheduler(pid),
        os.sched_getaffinity(pid),
        Path(f"/proc/{pid}/status").read_text().split("Cap")[1:4],
    )


async def test_no_limits_or_priorities_of_another_process(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """prlimit64, setpriority, the scheduler's calls and ioprio_set on another process
    (this test's and a sleeper without capabilities, the daemon's place) are refused;
    on the child itself (pid 0, glibc's setrlimit and os.nice) they work."""
    _need(raw_python, "seccomp")
    me = os.getpid()
    sleeper = _capless_sleeper()
    try:
        pid = sleeper.pid
        comm = Path(f"/proc/{pid}/comm")
        await until(lambda: comm.read_text() == "sleep\n", "the sleeper without capabilities")
        before = _process_state(me), _process_state(pid)
        assert before[1][6] == [f"{k}:\t0000000000000000\n" for k in ("Inh", "Prm", "Eff")]
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
        body = _ATTEMPT + (
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "def ioprio(which, who):\n"
            "    if libc.syscall(251, which, who, 3 << 13) != 0:\n"  # IOPRIO_CLASS_IDLE
            "        raise OSError(ctypes.get_errno(), 'ioprio_set')\n"
            "NOFILE, CPU = resource.RLIMIT_NOFILE, resource.RLIMIT_CPU\n"
            "FSIZE = resource.RLIMIT_FSIZE\n"
            "IDLE = os.sched_param(0)\n"
            f"attempt('prlimit_read', lambda: resource.prlimit({me}, NOFILE))\n"
            f"attempt('prlimit_same', lambda: resource.prlimit({me}, NOFILE, {nofile}))\n"
            f"attempt('prlimit_nofile', lambda: resource.prlimit({pid}, NOFILE, (16, 16)))\n"
            f"attempt('prlimit_cpu', lambda: resource.prlimit({pid}, CPU, (1, 1)))\n"
            f"attempt('prlimit_fsize', lambda: resource.prlimit({pid}, FSIZE, (0, 0)))\n"
            "attempt('prlimit_zygote', lambda: resource.prlimit(os.getppid(), CPU))\n"
            f"attempt('setpriority', lambda: os.setpriority(os.PRIO_PROCESS, {pid}, 19))\n"
            f"attempt('sched_setscheduler', lambda: os.sched_setscheduler({pid}, 5, IDLE))\n"
            f"attempt('sched_setparam', lambda: os.sched_setparam({pid}, IDLE))\n"
            f"attempt('sched_setaffinity', lambda: os.sched_setaffinity({pid}, {{0}}))\n"
            f"attempt('ioprio_set', lambda: ioprio(1, {pid}))\n"
            # the child's own: glibc's setrlimit is prlimit64(0, ...), os.nice setpriority
            "attempt('own_prlimit', lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0)))\n"
            "attempt('own_setrlimit', lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))\n"
            "attempt('own_getrlimit', lambda: resource.getrlimit(NOFILE))\n"
            "attempt('own_nice', lambda: os.nice(1))\n"
            "attempt('own_sched', lambda: os.sched_setscheduler(0, os.SCHED_BATCH, IDLE))\n"
            "attempt('own_affinity', lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))\n"
            "attempt('own_ioprio', lambda: ioprio(1, 0))\n"
            "return out"
        )
        res = await raw_python.run(tool(body), {}, workspace)
        assert res.ok, res
        others: tuple[str, ...] = ("prlimit_read", "prlimit_same", "prlimit_nofile")
        others += ("prlimit_cpu", "prlimit_fsize", "prlimit_zygote", "setpriority")
        others += ("sched_setscheduler", "sched_setparam", "sched_setaffinity", "ioprio_set")
        own = ("own_prlimit", "own_setrlimit", "own_getrlimit", "own_nice", "own_sched")
        assert res.result == {
            **dict.fromkeys(others, "PermissionError"),
            **dict.fromkeys((*own, "own_affinity", "own_ioprio"), "done"),
        }
        assert (_process_state(me), _process_state(pid)) == before
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


_IPC = """import ctypes
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for name, call in (
    ('shmget', lambda: libc.shmget(0, 4096, 0o600)),
    ('msgget', lambda: libc.msgget(0, 0o600)),
    ('semget', lambda: libc.semget(0, 1, 0o600)),
    ('inotify_init1', lambda: libc.inotify_init1(0)),
    ('inotify_init', lambda: libc.inotify_init()),
):
    ctypes.set_errno(0)
    out[name] = [call(), ctypes.get_errno()]
return out
"""


async def test_no_system_v_ipc_nor_inotify(raw_python: SandboxRunner, workspace: Path) -> None:
    """A shared memory segment outlives its child (host memory no rlimit counts), a
    queue is a channel between tenants, inotify watches directories Landlock never
    checks: none is offered."""
    _need(raw_python, "seccomp")
    res = await raw_python.run(tool(_IPC), {}, workspace)
    assert res.ok, res
    made = res.result
    libc = ctypes.CDLL(None, use_errno=True)
    remove = {"shmget": libc.shmctl, "msgget": libc.msgctl, "semget": libc.semctl}
    for name, rm in remove.items():  # what a run without the rules left behind
        if made[name][0] >= 0:
            rm(made[name][0], 0, None)  # IPC_RMID
    assert made == {name: [-1, errno.EPERM] for name in made}, made
    assert set(made) == {"shmget", "msgget", "semget", "inotify_init1", "inotify_init"}


_SIGNALS = """import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
out = {}
info = ctypes.create_string_buffer(struct.pack('iii', 0, 0, -1) + bytes(116))  # SI_QUEUE
calls = {'rt_sigqueueinfo': (129, ME, 0, info), 'rt_tgsigqueueinfo': (297, ME, ME, 0, info)}
for name, args in calls.items():
    ctypes.set_errno(0)
    out[name] = [libc.syscall(*args), ctypes.get_errno()]
return out
"""


async def test_no_queued_signal_to_another_process(workspace: Path) -> None:
    """kill, tkill, tgkill are refused; rt_sigqueueinfo and rt_tgsigqueueinfo signal
    as they do. Landlock off: a kernel before 6.12 does not scope signals (signal 0
    here, to this process: a run without the rules harms nothing)."""
    r = await _runner(Layers(restricted=False, landlock=False))
    try:
        _need(r, "seccomp")
        res = await r.run(tool(_SIGNALS.replace("ME", str(os.getpid()))), {}, workspace)
        assert res.ok, res
        assert res.result == {n: [-1, errno.EPERM] for n in res.result}, res.result
        assert len(res.result) == 2
    finally:
        await r.aclose()


async def test_no_descriptor_signals_another_process(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """F_SETOWN (and F_SETOWN_EX, F_SETSIG) would have SIGIO, whose default action
    kills, sent to the owner, the daemon, each time a pipe with O_ASYNC can be read;
    FIOSETOWN is the same for a socket. Other fcntl and ioctl commands still work."""
    _need(raw_python, "seccomp")
    me = os.getpid()
    body = _ATTEMPT + (
        "import fcntl, struct, termios\n"
        "r, w = os.pipe()\n"
        f"attempt('F_SETOWN', lambda: fcntl.fcntl(r, 8, {me}))\n"
        f"attempt('F_SETOWN_EX', lambda: fcntl.fcntl(r, 15, struct.pack('ii', 1, {me})))\n"
        "attempt('F_SETSIG', lambda: fcntl.fcntl(r, 10, 10))\n"
        f"attempt('FIOSETOWN', lambda: fcntl.ioctl(r, 0x8901, struct.pack('i', {me})))\n"
        "attempt('F_SETFL', lambda: os.set_blocking(r, False))\n"
        "attempt('F_GETOWN', lambda: fcntl.fcntl(r, fcntl.F_GETOWN))\n"
        "attempt('F_DUPFD_CLOEXEC', lambda: fcntl.fcntl(r, fcntl.F_DUPFD_CLOEXEC, 0))\n"
        "attempt('FIONREAD', lambda: fcntl.ioctl(r, termios.FIONREAD, b'0000'))\n"
        "return out"
    )
    res = await raw_python.run(tool(body), {}, workspace)
    assert res.ok, res
    refused = ("F_SETOWN", "F_SETOWN_EX", "F_SETSIG", "FIOSETOWN")
    allowed = ("F_SETFL", "F_GETOWN", "F_DUPFD_CLOEXEC", "FIONREAD")
    assert res.result == {
        **dict.fromkeys(refused, "PermissionError"),
        **dict.fromkeys(allowed, "done"),
    }

"""The test suite's fork server (tests/forkserver.py): a process it starts is what a fresh
`python -m MODULE` would have been, and what it cannot reproduce is a plain exec.

Each test runs a probe module (written into tmp_path, the cwd) both ways, through a
server of its own: `fresh` (the server off: a real exec) and `forked` (served), and
compares what the probe reports or how it ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import forkserver
from tests.procs import gone
from tests.waits import HANG_S

PROBE = r"""
import json, os, signal, sys, tempfile, time

def stream(s):
    return {"encoding": s.encoding, "errors": s.errors, "line_buffering": s.line_buffering,
            "write_through": s.write_through, "mode": s.mode,
            "name": getattr(s.buffer, "raw", s.buffer).name,
            "tty": s.isatty(), "fd": s.fileno(), "newlines": s._CHUNK_SIZE > 0}

def fds():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            out[fd] = os.get_inheritable(fd)
        except OSError:
            continue
    return out

def ctty():
    try:
        os.close(os.open("/dev/tty", os.O_RDWR))
    except OSError:
        return None
    return os.tcgetpgrp(0) == os.getpgid(0) if os.isatty(0) else "not fd 0"

def report():
    disp = {}
    for n in range(1, signal.NSIG):
        try:
            h = signal.getsignal(n)
        except (OSError, ValueError):
            continue
        disp[n] = h if isinstance(h, int) or h is None else getattr(h, "__name__", "?")
    return {
        "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "path": sys.path,
        "user": [__import__("site").USER_BASE, __import__("site").USER_SITE,
                 __import__("sysconfig").get_config_var("userbase")],
        "umask": os.umask(0), "env": dict(os.environ), "ppid": os.getppid(),
        "session": os.getsid(0) == os.getpid(), "group": os.getpgid(0) == os.getpid(),
        "fds": fds(), "stdin": stream(sys.stdin), "stdout": stream(sys.stdout),
        "stderr": stream(sys.stderr), "signals": disp,
        "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "main": sorted(vars(sys.modules["__main__"])),
        "builtins": type(vars(sys.modules["__main__"]).get("__builtins__")).__name__,
        "annotations": repr(vars(sys.modules["__main__"]).get("__annotations__")),
        "name": __name__, "tmp": tempfile.gettempdir(),
        "stdin_text": "" if sys.stdin.isatty() else sys.stdin.read(), "ctty": ctty(),
        "atexit": os.environ.get("PROBE_ATEXIT"),
    }

what = sys.argv[1]
if what == "report" and "PROBE_OUT" in os.environ:  # stdout may be a tty: to a file
    with open(os.environ["PROBE_OUT"], "w") as out:
        out.write(json.dumps(report()))
elif what == "report":
    print(json.dumps(report()))
elif what == "exit":
    sys.exit(int(sys.argv[2]))
elif what == "message":
    sys.exit("a message")
elif what == "raise":
    raise ValueError("boom")
elif what == "interrupt":
    raise KeyboardInterrupt
elif what == "wait":
    print("ready", flush=True)
    signal.pause()  # until the test's signal ends it
elif what == "buffered":
    import atexit
    atexit.register(lambda: sys.stdout.write("atexit ran\n"))
    sys.stdout.write("no newline, no flush")
"""


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """A cwd of the test's own with the probe in it."""
    (tmp_path / "forkserver_probe.py").write_text(PROBE)
    return tmp_path


@pytest.fixture(scope="module")
def shared() -> Iterator[forkserver.ForkServer]:
    """One probe server for the tests that do not stop it or change its environment
    (each server imports roost once: about 1.5 s of CPU)."""
    own = forkserver.ForkServer(module="forkserver_probe")
    try:
        yield own
    finally:
        own.stop()


def _serving(monkeypatch: pytest.MonkeyPatch, own: forkserver.ForkServer) -> None:
    monkeypatch.setattr(forkserver, "current", own)
    monkeypatch.setattr(subprocess.Popen, "_execute_child", forkserver._execute_child)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, shared: forkserver.ForkServer) -> forkserver.ForkServer:
    _serving(monkeypatch, shared)
    return shared


@pytest.fixture
def own_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[forkserver.ForkServer]:
    """A server of the test's own, started at its first launch (after the test has set
    the environment it is to start with)."""
    own = forkserver.ForkServer(module="forkserver_probe")
    _serving(monkeypatch, own)
    try:
        yield own
    finally:
        own.stop()


def run(
    server: forkserver.ForkServer,
    fresh: bool,
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    **kw: Any,
) -> subprocess.CompletedProcess[bytes]:
    """The probe with `args`, exec'd (`fresh`) or from `server`; the count of served
    starts checked to match."""
    before = server.served
    with monkeypatch.context() as m:
        m.setattr(forkserver, "current", None if fresh else server)
        kw.setdefault("capture_output", True)
        done = subprocess.run(
            [sys.executable, "-m", "forkserver_probe", *args], timeout=HANG_S, **kw
        )
    assert server.served == before + (0 if fresh else 1)
    return done


def both(server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, *args: str,
         **kw: Any) -> tuple[Any, Any]:  # fmt: skip
    fresh = run(server, True, monkeypatch, *args, **kw)
    forked = run(server, False, monkeypatch, *args, **kw)
    return fresh, forked


def test_a_forked_probe_reports_what_a_fresh_one_does(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    run(server, False, monkeypatch, "exit", "0", cwd=probe)  # started before the changes
    r, w = os.pipe()
    ignored = signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # an exec keeps both
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
    try:
        env = {**os.environ, "PROBE_VALUE": "é ü", "TMPDIR": str(probe)}
        env.pop("PROBE_ATEXIT", None)
        kw: dict[str, Any] = {"cwd": probe, "env": env, "umask": 0o027, "pass_fds": [w]}
        fresh, forked = both(server, monkeypatch, "report", "x y", input=b"in\nput", **kw)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGWINCH])
        signal.signal(signal.SIGUSR2, ignored)
        os.close(r)
        os.close(w)
    assert (fresh.returncode, forked.returncode) == (0, 0), (fresh.stderr, forked.stderr)
    a, b = json.loads(fresh.stdout), json.loads(forked.stdout)
    assert a["ppid"] == os.getpid()
    assert a["env"]["PROBE_VALUE"] == "é ü" and a["tmp"] == str(probe)
    assert a["umask"] == 0o027 and str(w) in a["fds"] and a["stdin_text"] == "in\nput"
    assert a["argv"][1:] == ["report", "x y"] and a["path0"] == str(probe)
    assert a["signals"][str(int(signal.SIGUSR2))] == signal.SIG_IGN
    assert int(signal.SIGWINCH) in a["mask"]
    # Python installs its SIGINT handler unless SIGINT was ignored at its start (a run in a
    # background job of a non-interactive shell: CI's, started with `&`, ignores it)
    inherited = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert a["signals"]["2"] == (signal.SIG_IGN if inherited else "default_int_handler")
    assert a == b
    assert fresh.stderr == forked.stderr == b""


def test_exit_codes_messages_and_tracebacks_are_as_python_makes_them(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    for args in (["exit", "3"], ["exit", "0"], ["exit", "300"], ["message"], ["raise"]):
        fresh, forked = both(server, monkeypatch, *args, cwd=probe)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            fresh.returncode,
            fresh.stdout,
            fresh.stderr,
        ), args
    assert fresh.returncode == 1 and b"ValueError: boom" in fresh.stderr


def test_an_uncaught_keyboard_interrupt_ends_the_process_by_sigint(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    fresh, forked = both(server, monkeypatch, "interrupt", cwd=probe)
    assert fresh.returncode == forked.returncode == -signal.SIGINT
    assert forked.stderr == fresh.stderr


def test_stdout_is_flushed_after_atexit_at_the_end(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    fresh, forked = both(server, monkeypatch, "buffered", cwd=probe)
    assert fresh.stdout == forked.stdout == b"no newline, no flushatexit ran\n"


@pytest.mark.parametrize("unbuffered", [None, "1"])
def test_a_tty_stdout_is_line_buffered_and_a_new_session_is_its_own(
    own_server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path,
    unbuffered: str | None,
) -> None:  # fmt: skip
    if unbuffered is None:  # before the server starts: it is started with os.environ
        monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    else:
        monkeypatch.setenv("PYTHONUNBUFFERED", unbuffered)
    reports = []
    env = {**os.environ, "PROBE_OUT": str(probe / "out")}
    for fresh in (True, False):
        main, tty = pty.openpty()
        try:
            done = run(own_server, fresh, monkeypatch, "report", cwd=probe, env=env,
                       stdin=subprocess.DEVNULL, stdout=tty, stderr=tty,
                       capture_output=False, start_new_session=True)  # fmt: skip
        finally:
            os.close(tty)
            os.close(main)
        assert done.returncode == 0
        reports.append(json.loads((probe / "out").read_text()))
    a, b = reports
    assert a["stdout"]["tty"] and a["session"]
    assert a["stdout"]["line_buffering"] == (unbuffered is None) != a["stdout"]["write_through"]
    assert a["stderr"]["tty"] and not a["stdin"]["tty"]
    assert a == b


def test_a_tty_given_as_controlling_terminal_is_the_forked_process_s_too(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    """`controlling_tty`, the one `preexec_fn` served (tests/spine/terminal_pty.py's):
    the pty is the new session's controlling terminal, the process its foreground."""
    reports = []
    env = {**os.environ, "PROBE_OUT": str(probe / "out")}
    for fresh in (True, False):
        main, tty = pty.openpty()
        try:
            done = run(server, fresh, monkeypatch, "report", cwd=probe, env=env, stdin=tty,
                       stdout=tty, stderr=tty, capture_output=False, start_new_session=True,
                       preexec_fn=forkserver.controlling_tty)  # fmt: skip
        finally:
            os.close(tty)
            os.close(main)
        assert done.returncode == 0
        reports.append(json.loads((probe / "out").read_text()))
    a, b = reports
    assert a["ctty"] is True and a["session"] and a["stdin"]["tty"]
    assert a == b


def test_signals_and_waiting_are_as_for_an_execd_child(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    before = server.served
    for fresh in (True, False):
        with monkeypatch.context() as m:
            m.setattr(forkserver, "current", None if fresh else server)
            proc = subprocess.Popen(
                [sys.executable, "-m", "forkserver_probe", "wait"],
                cwd=probe,
                stdout=subprocess.PIPE,
            )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(HANG_S) == -signal.SIGTERM
        proc.stdout.close()
        assert gone(proc.pid)
    assert server.served == before + 1


def test_asyncio_subprocesses_are_served_and_reaped(
    server: forkserver.ForkServer, probe: Path
) -> None:
    before = server.served

    async def go() -> list[Any]:
        out = []
        for args in (("exit", "5"), ("report",)):
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "forkserver_probe", *args, cwd=probe,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            stdout, _ = await asyncio.wait_for(proc.communicate(), HANG_S)
            out.append((proc.returncode, stdout))
        return out

    (code, _), (zero, report) = asyncio.run(go())
    assert (code, zero) == (5, 0)
    assert json.loads(report)["ppid"] == os.getpid()
    assert server.served == before + 2


def test_another_pythonpath_and_home_are_served_as_a_fresh_start_sees_them(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    (probe / "lib").mkdir()
    paths = os.pathsep.join([str(forkserver.REPO), "lib", str(probe / "missing")])
    env = {**os.environ, "PYTHONPATH": paths, "HOME": str(probe)}
    fresh, forked = both(server, monkeypatch, "report", cwd=probe, env=env)
    a, b = json.loads(fresh.stdout), json.loads(forked.stdout)
    assert a["path"][:3] == [str(probe), str(forkserver.REPO), str(probe / "lib")]
    assert a["user"][0] == str(probe / ".local")
    assert a == b


@pytest.mark.parametrize("case", ["preexec_fn", "PYTHONPATH", "cwd holds bridge", "shell"])
def test_what_the_server_cannot_reproduce_is_execd(
    server: forkserver.ForkServer, probe: Path, case: str
) -> None:
    run_kw: dict[str, Any] = {"cwd": probe, "capture_output": True, "timeout": HANG_S}
    args: Any = [sys.executable, "-m", "forkserver_probe", "exit", "4"]
    if case == "preexec_fn":
        run_kw["preexec_fn"] = os.getpid
    elif case == "PYTHONPATH":
        (probe / "lib" / "bridge").mkdir(parents=True)  # would shadow roost's package
        run_kw["env"] = {**os.environ, "PYTHONPATH": str(probe / "lib")}
    elif case != "cwd holds bridge":
        args = f"{sys.executable} -m forkserver_probe exit 4"
        run_kw["shell"] = True
    served = server.served
    warm = subprocess.run([sys.executable, "-m", "forkserver_probe", "exit", "0"], cwd=probe)
    assert warm.returncode == 0 and server.served == served + 1  # started, and serving
    if case == "cwd holds bridge":
        (probe / "bridge").mkdir()
    fallen = server.fallen
    done = subprocess.run(args, **run_kw)
    assert done.returncode == 4
    assert server.served == served + 1
    assert server.fallen == fallen + (0 if case == "shell" else 1)  # a shell is no `-m`


def test_a_dead_server_is_replaced_and_a_start_never_fails_for_it(
    own_server: forkserver.ForkServer, probe: Path
) -> None:
    server = own_server
    args = [sys.executable, "-m", "forkserver_probe", "exit", "6"]
    assert subprocess.run(args, cwd=probe).returncode == 6
    assert server.proc is not None
    first = server.proc.pid
    server.proc.kill()
    server.proc.wait(HANG_S)
    assert subprocess.run(args, cwd=probe).returncode == 6  # fell back: the server was dead
    assert subprocess.run(args, cwd=probe).returncode == 6  # a new server
    assert server.proc is not None and server.proc.pid != first
    assert server.served == 2


def test_ROOST_TEST_FRESH_turns_the_server_off(tmp_path: Path) -> None:
    """The session's own server: off in a child pytest run with ROOST_TEST_FRESH=1."""
    test = tmp_path / "test_inner.py"
    test.write_text(
        "def test_inner(roost_fork_server):\n"
        "    import os\n"
        "    assert (roost_fork_server is None) == (os.environ['ROOST_TEST_FRESH'] == '1')\n"
    )
    for fresh in ("1",):  # "0": every other test of the session
        env = {**os.environ, "ROOST_TEST_FRESH": fresh}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--rootdir", str(forkserver.REPO), "--confcutdir", str(forkserver.REPO / "tests"),
             "-p", "tests.conftest", str(test)],
            cwd=forkserver.REPO, env=env, capture_output=True, timeout=HANG_S,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout.decode()[-2000:]


def test_another_locale_is_served_by_a_server_of_its_own_environment(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    """A start whose LANG/LC_*/SSL_CERT_* differ from the server's (tests/mcp's minimal
    environment) is served by a second server started with that environment, as a fresh
    start with it would be (PEP 538's LC_CTYPE too); a second such start reuses it;
    MAX_SIBLINGS caps them (each imports roost), the rest exec'd."""
    monkeypatch.setattr(forkserver, "MAX_SIBLINGS", len(server.siblings) + 1)
    minimal = {k: os.environ[k] for k in ("HOME", "PATH") if k in os.environ}
    env = {**minimal, "PYTHONPATH": str(forkserver.REPO), "PYTHONUNBUFFERED": "1"}
    for _ in range(2):
        fresh, forked = both(server, monkeypatch, "report", cwd=probe, env=env)
        assert (fresh.returncode, forked.returncode) == (0, 0), (fresh.stderr, forked.stderr)
        a, b = json.loads(fresh.stdout), json.loads(forked.stdout)
        assert a["env"].items() >= env.items() and a["ppid"] == os.getpid()
        assert a == b
        assert fresh.stderr == forked.stderr == b""
    siblings, fallen = len(server.siblings), server.fallen
    other = {**minimal, "LANG": "C.UTF-8", "SSL_CERT_FILE": str(probe / "ca")}
    done = subprocess.run([sys.executable, "-m", "forkserver_probe", "exit", "7"], cwd=probe,
                          env=other, timeout=HANG_S)  # fmt: skip
    assert done.returncode == 7 and server.fallen == fallen + 1
    assert len(server.siblings) == siblings


def test_the_hook_counts_every_process_started_and_roosts_among_them(
    server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch, probe: Path
) -> None:
    """What tests/cpu_profile.py reads per test: a served probe and a plain `-c` child
    are processes, a `python -m bridge.cli.main` is roost's too: told by its argv (here
    run by /bin/true, no roost start's CPU), served or not. The server's own start
    counts as a process: the first run starts it."""
    run(server, False, monkeypatch, "exit", "0", cwd=probe)
    before = (forkserver.spawned, forkserver.roost_starts)
    run(server, False, monkeypatch, "exit", "0", cwd=probe)
    subprocess.run([sys.executable, "-c", "pass"], check=True, timeout=HANG_S)
    assert (forkserver.spawned, forkserver.roost_starts) == (before[0] + 2, before[1])
    monkeypatch.setattr(forkserver, "current", None)
    roost = [sys.executable, "-m", "bridge.cli.main", "--help"]
    subprocess.run(roost, executable="/bin/true", check=True, timeout=HANG_S)
    assert (forkserver.spawned, forkserver.roost_starts) == (before[0] + 3, before[1] + 1)

"""A pre-imported fork server for the `roost` processes the test suite starts.

Why: some 400 tests start `python -m bridge.cli.main ...` (a command or a daemon), and
nearly all of each start's CPU (0.35-2.5 s) is importing roost's modules (pydantic,
the config's models, aiohttp, ...). A fork server imports them once per pytest worker;
each start then forks from it instead of a fresh interpreter importing them again.

What a test gets is still a real, separate OS process running the real
`bridge.cli.main` as `__main__` (runpy, as `python -m` does), and a real CHILD of the
test's process: the server forks an intermediate that forks the process and exits,
while the worker is a child subreaper (`PR_SET_CHILD_SUBREAPER`, only around the
launch), so the process is reparented to the worker and `Popen.wait/poll`, asyncio's
child watcher and `os.waitpid` see it and its exit code or signal exactly as they
would an exec'd child's.

`install()` wraps `subprocess.Popen._execute_child` (asyncio's subprocesses are Popen
objects too). A start is served only when the server can reproduce it: argv exactly
`[sys.executable, "-m", "bridge.cli.main", ...]`, no shell, no `preexec_fn`, no
user/group change, `close_fds`, `restore_signals`, an existing cwd that holds no module
the server imported, and an environment that agrees with the server's on every
variable read while it imported (recorded; HOME aside, whose only use, the user site
folders, is redone), on every PYTHON*, LANG, LC_* variable (a PYTHONPATH whose folders
hold none of those modules aside: `sys.path` is rebuilt as site.py builds it) and on a
few read by C code at import (`IMPORT_ENV`). A start refused only for its environment
(a variable other than PYTHONPATH: tests/mcp's minimal one has no LANG and no SSL_CERT_*)
goes to a sibling server started with that environment (what the interpreter's start
adds to it, PEP 538's LC_CTYPE, too), one per distinct value of those variables, at
most MAX_SIBLINGS a worker. Anything else, and any failure of a server (it is restarted
once, then left off for the session), is a plain exec; in the suite that is mostly tests
with a `preexec_fn` (a resource limit, a umask; `controlling_tty` with a new session is
served) or a process that is not `-m bridge.cli.main` (`-c` probes of what a start
imports).

In the forked process, as a fresh interpreter has them: the request's environment
(os.environ and putenv), cwd (and `sys.path[0]`), umask, new session or process group
(and a tty as its controlling terminal: `controlling_tty`),
fds 0/1/2 and `pass_fds` only (everything else closed), `sys.stdin/stdout/stderr`
rebuilt over the new fds as Python's start-up builds them (a tty's stdout
line-buffered, stderr line-buffered with backslashreplace, PYTHONUNBUFFERED), the
worker's ignored signals ignored and the others default (SIGPIPE and SIGXFSZ ignored,
SIGINT raising KeyboardInterrupt), the worker's signal mask, `sys.argv`, a fresh
`__main__`, `random` re-seeded (Python does it at fork), `tempfile`'s folder looked up
again. The end is `python -m`'s: SystemExit's code, an uncaught exception's traceback
and status 1, KeyboardInterrupt as SIGINT, non-daemon threads joined, atexit run,
stdio flushed (120 if stdout cannot be).

Not reproduced: the hash seed (every forked process shares the server's, so set and
dict-of-str iteration orders agree between them where fresh processes would differ),
`sys.modules` (the process already holds every module the server imported, even those
its command would not import), the screens' tables (`bridge.screening.prepare`: the
server builds them, as `roost serve` does after its ready line), `/proc/PID/cmdline`
and `/proc/PID/environ` (the server's: `ps` shows `python -m tests.forkserver`), resource
limits (the worker's when the server started), the garbage collector's generations,
the start-up caches' contents (bridge/dataclass_code.py, regex_code.py: the server's
entries are saved too at exit), and the destructors a real interpreter's finalization
runs (os._exit after the steps above). While a launch runs (a few ms), the worker is a subreaper: an
orphan of another of its descendants at that moment becomes its (unreaped) child.
Tests that look at what a NEW process imports or writes at start take the marker
`fresh_roost`; `ROOST_TEST_FRESH=1` turns the server off for the whole run.
`ROOST_TEST_FORKSERVER_LOG=FILE` appends one line per start: served or fallen back
(and why).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODULE = "bridge.cli.main"
PR_SET_CHILD_SUBREAPER = 36
START_S = 120.0  # the server's imports, on a loaded machine: a hang guard only
REPLY_S = 60.0  # one launch (two forks): a hang guard only
MAX_FDS = 32
MAX_SIBLINGS = 3  # servers for other environments, each an import of roost (~1.5 s CPU)
# read by C code at import or by the interpreter's start, which the recorder cannot see
IMPORT_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "OPENSSL_CONF", "TZ", "PYTHONHOME")
PRELOAD = (
    "bridge.app.build",
    "bridge.app.serve",
    "bridge.app.channels_up",
    "bridge.channels.telegram.start",
    "bridge.channels.telegram.platform",
    "bridge.channels.whatsapp.platform",
    "bridge.channels.web.platform",
    "bridge.channels.terminal.platform",
    "bridge.mcp.server",
    "bridge.mcp.client",
    "bridge.mcp.run",
    "bridge.mcp.http",
    # what `roost serve` imports on its way to the ready line: the web channel (aiohttp),
    # the sandbox runner (forge), dispatch and readiness (~0.15-0.2 s of CPU a daemon start)
    "bridge.app.web_extras",
    "bridge.app.readiness",
    "bridge.core.dispatch",
    "bridge.core.lease_hold",
    "bridge.channels.common.shared",
    "forge.runner",
    "bridge.llm.openai",  # a configured model's backend (tests serve a fake OpenAI one)
    # what `roost chat` imports on its way to the prompt: its editor and renderer
    # (prompt_toolkit, rich's markdown, pygments, markdown_it, wcwidth: ~250 modules,
    # ~0.1-0.2 s of CPU a chat start)
    "bridge.channels.terminal.editor",
    "bridge.channels.terminal.render",
    "bridge.channels.terminal.tty",
    "bridge.channels.terminal.attach",
    "bridge.channels.terminal.history",
    "bridge.channels.terminal.links",
    "bridge.channels.terminal.paths",
    "prompt_toolkit.input.vt100",  # and what its prompt imports as it opens
    "prompt_toolkit.input.posix_utils",
    "prompt_toolkit.key_binding.bindings.search",
    "prompt_toolkit.patch_stdout",
)
HEADER = struct.Struct("!I")


# ---------------------------------------------------------------- the wire


def _send(sock: socket.socket, message: Mapping[str, Any], fds: list[int] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps(message).encode()
    data = HEADER.pack(len(body)) + body
    sent = socket.send_fds(sock, [data], list(fds)) if fds else sock.send(data)
    if sent < len(data):
        sock.sendall(data[sent:])


def _receive(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and the fds that came with it; (None, []) at end of file."""
    head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, MAX_FDS)
    while head and len(head) < HEADER.size:
        more = sock.recv(HEADER.size - len(head))
        if not more:
            break
        head += more
    if len(head) < HEADER.size:
        for fd in fds:
            os.close(fd)
        return None, []
    (size,) = HEADER.unpack(head)
    body = b""
    while len(body) < size:
        more = sock.recv(size - len(body))
        if not more:
            for fd in fds:
                os.close(fd)
            return None, []
        body += more
    return json.loads(body), fds


# ---------------------------------------------------------------- the server


def _record_env_reads() -> tuple[set[str], Callable[[], None]]:
    """Record the name of every variable read through os.environ (os.getenv too) until
    the returned function is called."""
    seen: set[str] = set()
    cls = type(os.environ)
    getitem, contains = cls.__getitem__, cls.__contains__

    def spy_get(self: Any, key: Any) -> Any:
        seen.add(str(key))
        return getitem(self, key)

    def spy_contains(self: Any, key: object) -> bool:
        seen.add(str(key))
        return contains(self, key)

    cls.__getitem__ = spy_get  # type: ignore[method-assign]
    cls.__contains__ = spy_contains  # type: ignore[method-assign]

    def stop() -> None:
        cls.__getitem__ = getitem  # type: ignore[method-assign]
        cls.__contains__ = contains  # type: ignore[method-assign]

    return seen, stop


def _preload() -> dict[str, Any]:
    """Import what roost's commands and daemon import (not bridge.cli.main itself)."""
    import pkgutil

    before = dict(os.environ)
    seen, stop = _record_env_reads()
    plugins = "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    if plugins:  # as bridge.cli.main does, before pydantic's first model
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    try:
        import bridge
        import bridge.cli

        names = [f"bridge.cli.{m.name}" for m in pkgutil.iter_modules(bridge.cli.__path__)]
        for name in [*PRELOAD, *names]:
            if name == MODULE:
                continue
            try:
                __import__(name)
            except Exception:
                sys.modules.pop(name, None)
        with contextlib.suppress(Exception):  # built by a daemon after ready, by chat
            from bridge.screening.prepare import steps  # while one types: ~25 ms a start

            for _ in steps():
                pass
    finally:
        stop()
        if plugins:
            del os.environ["PYDANTIC_DISABLE_PLUGINS"]
    seen.discard("PYDANTIC_DISABLE_PLUGINS")
    reads = {key: before.get(key) for key in seen}
    tops = sorted({name.split(".")[0] for name in sys.modules if not name.startswith("_")})
    return {"env": reads, "tops": tops, "threads": threading.active_count()}


def _proc_ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _serve(sock: socket.socket) -> tuple[dict[str, Any], list[int], int] | None:
    """Answer launch requests until end of file (returns None); in a launched process,
    returns its request, its fds and the "go" pipe it waits on."""
    while True:
        request, fds = _receive(sock)
        if request is None:
            return None
        pids_r, pids_w = os.pipe()
        go_r, go_w = os.pipe()
        middle = os.fork()
        if middle == 0:  # the intermediate: fork the process, say its pid, leave
            child = -1
            try:
                os.close(pids_r)
                os.close(go_w)
                child = os.fork()
                if child == 0:
                    os.close(pids_w)
                    return request, fds, go_r
                os.write(pids_w, str(child).encode())
            finally:
                if child != 0:
                    os._exit(0 if child > 0 else 1)
        os.close(pids_w)
        os.close(go_r)
        for fd in fds:
            os.close(fd)
        try:
            _pid, status = os.waitpid(middle, 0)
            raw = os.read(pids_r, 64)
        finally:
            os.close(pids_r)
        pid = int(raw) if raw else 0
        reply: dict[str, Any]
        if not pid or status != 0:
            reply = {"error": f"intermediate status {status}"}
        elif _proc_ppid(pid) != request["parent"]:
            os.write(go_w, b"x")  # orphaned elsewhere: it leaves without running
            reply = {"error": "not reparented to the worker (no subreaper?)"}
        else:
            os.write(go_w, b"g")
            reply = {"pid": pid}
        os.close(go_w)
        _send(sock, reply)


def _stdio(name: str, fd: int, old: Any) -> Any:
    """A standard stream over `fd` as Python's start-up (create_stdio) makes it."""
    import io

    write = name != "stdin"
    unbuffered = bool(old.write_through)  # -u or PYTHONUNBUFFERED: as the server's
    raw_only = unbuffered and write  # stdin stays buffered (TextIOWrapper needs read1)
    mode = "wb" if write else "rb"
    buf: Any = open(fd, mode, buffering=0 if raw_only else -1, closefd=False)  # noqa: SIM115
    raw = buf if raw_only else buf.raw
    raw.name = f"<{name}>"
    line = not unbuffered and (raw.isatty() or name == "stderr")
    text = io.TextIOWrapper(
        buf,
        encoding=old.encoding,
        errors=old.errors,
        newline="\n",
        line_buffering=line,
        write_through=unbuffered,
    )
    text.mode = "w" if write else "r"  # type: ignore[misc]
    return text


def _become(request: dict[str, Any], fds: list[int], go: int) -> None:
    """Turn this forked process into what `python -m MODULE ARGS` would have started."""
    if os.read(go, 1) != b"g":
        os._exit(0)
    os.close(go)
    targets: list[int] = request["targets"]
    top = max([*targets, 2]) + 1
    high = [
        int(__import__("fcntl").fcntl(fd, __import__("fcntl").F_DUPFD_CLOEXEC, top + 64))
        for fd in fds
    ]
    for fd, target in zip(high, targets, strict=True):
        os.dup2(fd, target, inheritable=True)
    keep = sorted(set(targets))
    start = 0
    for fd in [*keep, 1 << 20]:
        if start < fd:
            os.closerange(start, fd)
        start = fd + 1
    if request["session"]:
        os.setsid()
    if request.get("ctty"):
        controlling_tty()
    if request["group"] >= 0:
        os.setpgid(0, request["group"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    ignored = set(request["ignored"])
    for number in range(1, signal.NSIG):
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(number, signal.SIG_IGN if number in ignored else signal.SIG_DFL)
        except (OSError, ValueError):
            continue
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if signal.SIGINT not in ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, request["mask"])
    for name in ("stdin", "stdout", "stderr"):
        stream = _stdio(name, ("stdin", "stdout", "stderr").index(name), getattr(sys, name))
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    import tempfile
    import types

    tempfile.tempdir = None
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        del sys.modules[name]
    main = types.ModuleType("__main__")  # as the interpreter's start makes it
    main.__annotations__ = {}
    main.__builtins__ = __import__("builtins")  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.path[0] = os.getcwd()
    sys.argv = ["-m", *request["args"]]


def _paths(env: Mapping[str, str], base: list[str], home: str | None) -> None:
    """`sys.path` and the user site folders as a fresh start with `env` computes them:
    [cwd, PYTHONPATH's folders (absolute, duplicates dropped, as site.py does), base];
    site's and sysconfig's user base from HOME."""
    if "PYTHONPATH" in env:
        seen: set[str] = set()
        path = []
        for entry in [*env["PYTHONPATH"].split(os.pathsep), *base]:
            full = os.path.normcase(os.path.abspath(entry))
            if full not in seen:
                seen.add(full)
                path.append(full)
        sys.path[:] = [os.getcwd(), *path]
    if env.get("HOME") != home:
        import site
        import sysconfig

        site.USER_BASE = None
        site.USER_SITE = None
        site.getusersitepackages()  # sets both from the new HOME
        if sysconfig._CONFIG_VARS is not None:  # type: ignore[attr-defined]
            sysconfig._CONFIG_VARS["userbase"] = site.USER_BASE  # type: ignore[attr-defined]


def _finish(module: str) -> None:
    """Run `module` as __main__ and end as `python -m` ends; never returns."""
    import atexit
    import gc
    import runpy

    code = 0
    interrupted = False
    try:
        runpy._run_module_as_main(module)  # type: ignore[attr-defined]
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        below = exc.__traceback__.tb_next if exc.__traceback__ else None  # from runpy on
        sys.excepthook(type(exc), exc.with_traceback(below), below)
        code = 1
    with contextlib.suppress(BaseException):  # joins the non-daemon threads, as Python does
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    gc.collect()
    try:
        sys.stdout.flush()
    except Exception:
        code = 120
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 130
    os._exit(code)


def _exit_code(value: object) -> int:
    """The status `sys.exit(value)` gives, its message printed as Python prints it."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    with contextlib.suppress(Exception):
        print(value, file=sys.stderr)
    return 1


def server_main(fd: int) -> None:
    """The server process: import, say ready with what it read, serve."""
    sock = socket.socket(fileno=fd)
    base = sys.path[1:]  # after `-m`'s cwd: what site made of the stdlib and site-packages
    home = os.environ.get("HOME")
    environ = dict(os.environ)  # with what the interpreter's start added (LC_CTYPE)
    info = _preload()
    info["environ"] = environ
    _send(sock, info)
    launched = _serve(sock)
    if launched is None:
        os._exit(0)
    request, fds, go = launched
    sock.detach()
    os.close(fd)
    try:
        _become(request, fds, go)
        _paths(request["env"], base, home)
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(1)
    _finish(request["module"])


# ---------------------------------------------------------------- the worker's side


def _libc_prctl() -> Callable[..., int]:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl


class ForkServer:
    """One server, started on first use; `launch` returns a pid or None (fall back)."""

    def __init__(
        self, log: str | None = None, module: str = MODULE, env: Mapping[str, str] | None = None
    ) -> None:
        self.module = module  # the one `python -m` module it runs (tests run a probe)
        self.start_env = env  # the server's environment (None: os.environ when it starts)
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.info: dict[str, Any] = {}
        self.env: dict[str, str] = {}
        self.added: dict[str, str] = {}
        self.failures = 0
        self.log = log
        self.prctl = _libc_prctl()
        self.served = 0
        self.fallen = 0
        # servers of other environments (`sibling`), by what a start depends on; none of
        # their own (`pooled` False in a sibling)
        self.siblings: dict[tuple[tuple[str, str | None], ...], ForkServer] = {}
        self.pooled = True

    def note(self, line: str) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(f"{os.getpid()} {line}\n")

    def fall_back(self, why: str, args: object) -> None:
        self.fallen += 1
        self.note(f"fallback {why}: {args!r}"[:400])

    # -- its life
    def _start(self) -> bool:
        mine, theirs = socket.socketpair()
        env = dict(os.environ if self.start_env is None else self.start_env)
        try:
            self.proc = _ORIGINAL_POPEN(
                [sys.executable, "-m", "tests.forkserver", str(theirs.fileno())],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=[theirs.fileno()],
            )
        finally:
            theirs.close()
        mine.settimeout(START_S)
        try:
            info, _ = _receive(mine)
        except OSError:
            info = None
        if info is None or info.get("threads") != 1:
            mine.close()
            self._reap()
            return False
        mine.settimeout(REPLY_S)
        self.sock, self.info, self.env = mine, info, env
        # set by the interpreter's start (PEP 538's LC_CTYPE for a C locale): a fresh
        # process of the same locale variables has them too
        self.added = {k: v for k, v in info["environ"].items() if k not in env}
        self.note(f"started server {self.proc.pid}")
        return True

    def _reap(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait(REPLY_S)

    def stop(self) -> None:
        with self.lock:
            if self.sock is not None:
                self.sock.close()
                self.sock = None
            proc, self.proc = self.proc, None
            if proc is not None:
                try:
                    proc.wait(REPLY_S)  # end of file: it leaves
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(REPLY_S)
            self.note(f"stopped: served {self.served}, fell back {self.fallen}")
        for sibling in self.siblings.values():
            sibling.stop()
        self.siblings.clear()

    # -- what it can do
    def sibling(self, why: str, env: Mapping[str, str]) -> ForkServer | None:
        """The server (started at its first start) for an environment this one refused
        for a variable (`why`) other than PYTHONPATH: one per distinct value of the
        variables a start depends on, at most MAX_SIBLINGS; None: fall back."""
        if not self.pooled or not why.startswith("env ") or why.startswith("env PYTHONPATH"):
            return None
        mine = self.env
        names = {*env, *mine, *self.info["env"]} - {"HOME", "PYTHONPATH"}
        read = self.info["env"]
        key = tuple((n, env.get(n)) for n in sorted(names) if n in read or _named(n))
        sibling = self.siblings.get(key)
        if sibling is None and len(self.siblings) < MAX_SIBLINGS:
            start = {name: value for name, value in env.items() if name != "PYTHONPATH"}
            if "PYTHONPATH" in mine:  # the forked process gets its own; the server ours
                start["PYTHONPATH"] = mine["PYTHONPATH"]
            sibling = ForkServer(log=self.log, module=self.module, env=start)
            sibling.pooled = False
            self.siblings[key] = sibling
            self.note(f"sibling {len(self.siblings)} for {why}")
        return sibling

    def refusal(self, env: Mapping[str, str], cwd: str) -> str | None:
        """Why the server cannot start a process with this env and cwd (None: it can)."""
        mine = self.env
        for key in {*env, *mine}:
            if _named(key) and env.get(key) != mine.get(key):
                if key == "PYTHONPATH" and self.path_fits(env[key], cwd):
                    continue
                return f"env {key}"
        for key, value in self.info["env"].items():
            if key != "HOME" and env.get(key) != value:  # HOME: site and sysconfig, redone
                return f"env {key} (read at import)"
        shadow = self.shadows(cwd)
        return None if shadow is None else f"cwd holds {shadow}"

    def shadows(self, folder: str) -> str | None:
        """An entry of `folder` that a fresh process would import instead of a module the
        server imported (None: none; this checkout's own folder never shadows)."""
        if Path(folder).resolve() == REPO:
            return None
        try:
            here = os.listdir(folder)
        except FileNotFoundError:
            return None
        except OSError:
            return f"{folder} unreadable"
        tops = set(self.info["tops"])
        for entry in here:
            if entry.removesuffix(".py") in tops or entry.split(".")[0] in tops:
                return entry
        return None

    def path_fits(self, value: str | None, cwd: str) -> bool:
        """A PYTHONPATH the forked process can take (the server started without one): its
        folders shadow nothing the server imported."""
        if value is None or "PYTHONPATH" in self.env:
            return False
        entries = value.split(os.pathsep)
        if "" in entries:
            return False
        return all(self.shadows(os.path.join(cwd, entry)) is None for entry in entries)

    def launch(self, request: dict[str, Any], fds: list[int]) -> int | None:
        with self.lock:
            if self.sock is None and (self.failures >= 2 or not self._start()):
                self.failures += 1
                return None
            if self.sock is None:
                return None
            why = self.refusal(request["env"], request["cwd"])
            if why is not None:
                sibling = self.sibling(why, request["env"])
                if sibling is None:
                    self.fall_back(why, request["args"])
                    return None
                pid = sibling.launch(request, fds)  # its own lock; it has no siblings
                if pid is None:
                    self.fallen += 1
                else:
                    self.served += 1
                return pid
            request["parent"] = os.getpid()
            request["env"] = {**self.added, **request["env"]}
            self.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            try:
                _send(self.sock, request, fds)
                reply, _ = _receive(self.sock)
            except OSError as exc:
                reply = {"error": f"server: {exc}"}
            finally:
                self.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
            if reply is None or "pid" not in reply:
                self.note(f"server failed: {reply}")
                self.failures += 1
                self.sock.close()
                self.sock = None
                self._reap()
                self.fallen += 1
                return None
            self.served += 1
            self.note(f"served {reply['pid']}: {request['args']!r}"[:400])
            return int(reply["pid"])


def _named(key: str) -> bool:
    """A variable the interpreter's start reads (PYTHON*, the locale's, IMPORT_ENV)."""
    return key.startswith(("PYTHON", "LC_")) or key in ("LANG", "LANGUAGE", *IMPORT_ENV)


_ORIGINAL_POPEN: Any = subprocess.Popen
_ORIGINAL_EXECUTE = subprocess.Popen._execute_child  # type: ignore[attr-defined]
current: ForkServer | None = None  # the server starts go to (None: every start an exec)
# What this worker's tests started through `subprocess` while the hook is installed, served
# or not (tests/cpu_profile.py reads them per test): every process, and roost's among them.
spawned = 0
roost_starts = 0
_local = threading.local()


def _ignored_signals() -> list[int]:
    out = []
    for number in range(1, signal.NSIG):
        try:
            if signal.getsignal(number) == signal.SIG_IGN:
                out.append(number)
        except (OSError, ValueError):
            continue
    return out


def _execute_child(self: subprocess.Popen[Any], args: Any, executable: Any, preexec_fn: Any,
                   close_fds: bool, pass_fds: Any, cwd: Any, env: Any, startupinfo: Any,
                   creationflags: Any, shell: bool, p2cread: int, p2cwrite: int,
                   c2pread: int, c2pwrite: int, errread: int, errwrite: int,
                   restore_signals: bool, gid: Any, gids: Any, uid: Any, umask: int,
                   start_new_session: bool, process_group: int) -> None:  # fmt: skip
    global spawned, roost_starts
    spawned += 1
    roost_starts += _roost_argv(args, MODULE)
    server = current
    whole = (args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
             creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
             restore_signals, gid, gids, uid, umask, start_new_session, process_group)  # fmt: skip
    if server is None or not _roost_argv(args, server.module):
        return _ORIGINAL_EXECUTE(self, *whole)  # type: ignore[no-any-return]
    why = _unservable(executable, preexec_fn, close_fds, pass_fds, cwd, env, shell,
                      restore_signals, gid, gids, uid, start_new_session)  # fmt: skip
    if why is not None:
        server.fall_back(why, args)
        return _ORIGINAL_EXECUTE(self, *whole)  # type: ignore[no-any-return]
    environ = dict(os.environ if env is None else env)
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    if umask < 0:
        umask = os.umask(0o022)
        os.umask(umask)
    targets = [0, 1, 2, *sorted(set(int(fd) for fd in pass_fds))]
    fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1,
           errwrite if errwrite != -1 else 2, *targets[3:]]  # fmt: skip
    request = {
        "module": server.module,
        "args": [str(a) for a in args[3:]],
        "env": environ,
        "cwd": os.path.abspath(where),
        "umask": umask,
        "session": bool(start_new_session),
        "ctty": preexec_fn is not None,  # controlling_tty: the only one served
        "group": process_group,
        "targets": targets,
        "ignored": _ignored_signals(),
        "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    }
    sys.audit("subprocess.Popen", executable or args[0], args, cwd, env)
    pid = server.launch(request, fds)
    if pid is None:
        return _ORIGINAL_EXECUTE(self, *whole)  # type: ignore[no-any-return]
    self.pid = pid
    self._child_created = True  # type: ignore[attr-defined]
    self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)  # type: ignore[attr-defined]


def controlling_tty() -> None:
    """A `preexec_fn` (with `start_new_session`): fd 0, a tty, becomes the controlling
    terminal of the new session. The one `preexec_fn` a server reproduces: it does this
    same step in the process it forks, after setsid."""
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _roost_argv(args: object, module: str) -> bool:
    return (
        isinstance(args, (list, tuple))
        and len(args) >= 3
        and all(isinstance(a, str) for a in args)
        and args[0] == sys.executable
        and args[1] == "-m"
        and args[2] == module
    )


def _unservable(executable: Any, preexec_fn: Any, close_fds: bool, pass_fds: Any, cwd: Any,
                env: Any, shell: bool, restore_signals: bool, gid: Any, gids: Any,
                uid: Any, start_new_session: bool) -> str | None:  # fmt: skip
    if shell:
        return "shell"
    if executable is not None and os.fspath(executable) != sys.executable:
        return "executable"
    if preexec_fn is not None and not (preexec_fn is controlling_tty and start_new_session):
        return "preexec_fn"
    if gid is not None or gids is not None or uid is not None:
        return "user or group"
    if not close_fds or not restore_signals:
        return "close_fds or restore_signals off"
    if len(pass_fds) > MAX_FDS - 3:
        return "pass_fds"
    if env is not None and not all(isinstance(k, str) and isinstance(v, str)
                                   for k, v in env.items()):  # fmt: skip
        return "bytes env"
    where = os.fspath(cwd) if cwd is not None else None
    if where is not None and (not isinstance(where, str) or not os.path.isdir(where)):
        return "cwd"
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return f"fd {fd} closed"
    return None


def install() -> None:
    subprocess.Popen._execute_child = _execute_child  # type: ignore[attr-defined]


def uninstall() -> None:
    subprocess.Popen._execute_child = _ORIGINAL_EXECUTE  # type: ignore[attr-defined]


if __name__ == "__main__":
    server_main(int(sys.argv[1]))

"""The zygote: the pristine process every sandbox child is forked from.

The helper forks its zygote once, right after it has prepared what is the same
for every call (module proxies, the seccomp program, the read-only roots) and
before it reads its first request. The zygote then only ever does two things:
fork a child when the helper asks (one byte on a socket), and report each
child's exit status. It never reads a request, never compiles a tool, never
holds a secret or a result, so a child forked from it holds nothing but what it
is handed after the fork: its own one call, written by the helper into the
child's memfd (forge.child). Before issue 9 the children were forked from the
helper itself, mid-stack, and inherited its compiled-tool cache and the bytes of
other calls in flight.

Protocol on a SOCK_SEQPACKET pair (one message per datagram):
helper -> zygote `b"f"` (fork one child; the helper never waits for the
answer: the child is collected from the socket like an exit report, so the
helper never stalls while the zygote forks, nor when it is stopped; only
`fork_child`, for measurements, waits), or `b"q"` (the same, but the child's
warm-up leaves out the reading path, forge.child `_warm_reading`: asked while
the helper's recent calls never read a file, forge.child_pool `ReadingHint`), or
`b"n"` (the same, but the child does not warm up at all, forge.child `_warm`:
asked while the helper's calls overlap, forge.child_pool `ChildPool.refill`);
helper -> zygote `b"w" generation dev ino path` (bind the children forked from now
on to the helper's workspace: see below; never a blocking send either: a binding
the socket has no room for, because the zygote is stopped and has not read what
came before, waits in the helper, replaced by any later one, and is sent before
the next `b"f"`, so every child asked for after it is forked with it);
zygote -> helper `b"c" pid generation` with four descriptors (the child's go pipe
write end, its job memfd, its result pipe read end, a pidfd), or `b"e" errno`;
zygote -> helper `b"x" pid status` when a child has exited (the zygote reaps
its children; the helper signals them through their pidfds, which cannot hit a
recycled pid). The zygote dies with the helper (PDEATHSIG), its children with it.
Before its first fork it installs the seccomp filter but for the calls it makes
itself (clone, pidfd_open, sendto, sendmsg); each child adds a filter refusing
those four (the stacked pair of forge.confine.seccomp: the same answers as the
whole filter, which a child used to install alone).

A helper serves one workspace (one tenant's: forge.helper_pool), so once its first
call has named it, the helper tells the zygote (`bind`): the zygote opens that
directory (and keeps it only if it is still the one the helper saw: same device
and inode) and every child it forks afterwards enforces its Landlock ruleset with
that workspace and moves into it while it waits, off the call's path
(forge.child). The "c" message names the binding a child was forked with (its
generation; 0: none), so the helper never hands a call to a child confined to
another workspace (forge.child_pool), and the child itself refuses a call whose
workspace is not the one it is confined to. The zygote holds no more than the
workspace's name and a descriptor of it: never a request, a tool or a result.
"""

from __future__ import annotations

import array
import contextlib
import dataclasses
import errno
import gc
import os
import select
import signal
import socket
import struct
from collections import deque
from dataclasses import dataclass
from typing import NoReturn

from forge.child import Bound, CallGlobals, HelperContext, child_main, prepare_call_globals
from forge.confine.capabilities import drop_capabilities
from forge.confine.kernel import close_range, die_with_parent
from forge.confine.rlimits import forbid_priority_raise

# what the helper asks the zygote to fork (one byte): a child that warms its call's
# path, the same without the reading path, or one that does not warm up at all
ASK_WARM, ASK_NOT_READING, ASK_COLD = b"f", b"q", b"n"
_CHILD = struct.Struct("<cii")
_BIND = struct.Struct("<ciQQ")  # then the workspace's path
BIND_MAX = 8192  # bytes of a bind message (a path is at most 4096)
_ERROR = struct.Struct("<ci")
_EXIT = struct.Struct("<cii")
_FDS = struct.Struct("4i")  # a child's descriptors as SCM_RIGHTS carries them


@dataclass
class Spawned:
    """A forked child waiting for its one call, as the helper holds it."""

    pid: int
    pidfd: int  # for signals: never hits a recycled pid
    go: int  # write end of its go pipe
    job: int  # memfd the call is written to
    result: int  # read end of its result pipe
    bound: int = 0  # the generation of the workspace it is confined to (0: none yet)

    def fds(self) -> tuple[int, int, int, int]:
        return (self.go, self.job, self.result, self.pidfd)


def _recv(sock: socket.socket, flags: int = 0) -> tuple[bytes, list[int]]:
    """One message and its descriptors (socket.recv_fds ignores `flags` on 3.11)."""
    size = socket.CMSG_LEN(4 * array.array("i").itemsize)
    data, ancdata, _, _ = sock.recvmsg(64, size, flags)
    fds = array.array("i")
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def kill(pidfd: int) -> None:
    with contextlib.suppress(ProcessLookupError, OSError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)


class Zygote:
    """The helper's handle on its zygote process."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.exits: list[tuple[int, int]] = []  # (pid, wait status) not yet handled
        self.born: deque[Spawned] = deque()  # children that arrived, not yet taken
        self.asked = 0  # children asked for that have not arrived yet
        self.generation = 0  # of the last workspace binding (0: none)
        self.unsent: bytes | None = None  # that binding, while the socket has no room for it

    @classmethod
    def start(cls, ctx: HelperContext) -> Zygote:
        """Fork the zygote now (call before reading any request)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        helper_pid = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - zygote
            mine.close()
            _zygote_main(ctx, theirs, helper_pid)
        theirs.close()
        return cls(pid, mine)

    def ask(self, reading: bool = True, warm: bool = True) -> None:
        """Ask for one more child without waiting for it: it arrives in `born` when
        `read_reports` meets it (the helper never stalls while the zygote forks).
        Never blocks either: BlockingIOError when the zygote has not read the asks
        queued before (it is stopped or stuck), including a binding not sent yet
        (`bind`), which always goes first. `reading` False: the child's warm-up
        leaves out the reading path (forge.child `_warm_reading`); `warm` False: the
        child does not warm up at all (forge.child `_warm`)."""
        if not self.send_binding():
            raise BlockingIOError(errno.EAGAIN, "the zygote has not read the binding yet")
        kind = ASK_COLD if not warm else ASK_WARM if reading else ASK_NOT_READING
        self.sock.send(kind, socket.MSG_DONTWAIT)
        self.asked += 1

    def bind(self, workspace: str, dev: int, ino: int) -> int:
        """Confine the children forked from now on to `workspace` (the directory with
        device `dev` and inode `ino`) while they wait; the new binding's generation.
        Never blocks: when the zygote has not read what was sent before (stopped or
        stuck), the binding waits here (replacing one that waited: only the latest
        counts) and `ask` sends it before the next fork request."""
        self.generation += 1
        path = os.fsencode(workspace)
        self.unsent = _BIND.pack(b"w", self.generation, dev, ino) + path
        self.send_binding()
        return self.generation

    def send_binding(self) -> bool:
        """Send the binding that waits, if one does, without blocking; False when it
        still waits (OSError other than a full socket: the zygote is gone)."""
        message, self.unsent = self.unsent, None
        if message is None:
            return True
        try:
            self.sock.send(message, socket.MSG_DONTWAIT)
        except BlockingIOError:
            self.unsent = message
            return False
        return True

    def fork_child(self) -> Spawned:
        """The next child, waiting for it (asking for one if none is on its way);
        exit reports and other children met meanwhile are kept. For measurements
        (bench.sandbox --forks): the helper never waits on its zygote."""
        if self.born:
            return self.born.popleft()
        if not self.asked:
            self.ask()
        while True:
            data, fds = _recv(self.sock)
            if not data:
                raise ConnectionError("the sandbox zygote exited")
            self._message(data, fds)
            if self.born:
                return self.born.popleft()

    def _message(self, data: bytes, fds: list[int]) -> None:
        """One message of the zygote: a child (into `born`), an exit report (into
        `exits`) or a failed fork (OSError)."""
        kind = data[:1]
        if kind == b"c" and len(fds) == 4:
            _, pid, bound = _CHILD.unpack(data)
            go, job, result, pidfd = fds
            self.asked -= 1
            self.born.append(Spawned(pid, pidfd, go, job, result, bound))
            return
        for fd in fds:
            os.close(fd)
        if kind == b"x":
            _, pid, status = _EXIT.unpack(data)
            self.exits.append((pid, status))
        elif kind == b"e":
            _, err = _ERROR.unpack(data)
            self.asked -= 1
            raise OSError(err, f"the zygote could not fork: {os.strerror(err)}")

    def read_reports(self) -> bool:
        """Read children and exit reports without blocking; False when the zygote
        is gone. A failed fork raises OSError (the next message waits)."""
        while True:
            try:
                data, fds = _recv(self.sock, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._message(data, fds)

    def close(self) -> None:
        self.sock.close()  # EOF: the zygote exits, waiting children die with it
        while self.born:
            for fd in self.born.popleft().fds():
                with contextlib.suppress(OSError):
                    os.close(fd)


@dataclass(frozen=True, slots=True)
class Binding:
    """The workspace the zygote's next children are confined to while they wait."""

    generation: int
    bound: Bound


def _bind(message: bytes, old: Binding | None) -> Binding | None:
    """The binding a `b"w"` message asks for (the previous one's descriptor closed);
    None when the workspace cannot be opened or is no longer the directory the
    helper saw (its children then confine themselves when their call arrives)."""
    if old is not None:
        os.close(old.bound.fd)
    _, generation, dev, ino = _BIND.unpack_from(message)
    path = os.fsdecode(message[_BIND.size :])
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (dev, ino):
        os.close(fd)
        return None
    return Binding(generation, Bound(path, fd))


def _fork_one(
    ctx: HelperContext,
    sock: socket.socket,
    pre: CallGlobals | None,
    bind: Binding | None,
    ask: bytes = ASK_WARM,
) -> tuple[int, int] | None:
    """Fork one child that waits for its call; send the helper its descriptors.
    `ask`: how it warms up (`ASK_WARM`: its call's path; `ASK_NOT_READING`: but the
    reading path; `ASK_COLD`: not at all)."""
    go_r, go_w = os.pipe2(os.O_CLOEXEC)
    res_r, res_w = os.pipe2(os.O_CLOEXEC)
    job = os.memfd_create("forge-call", os.MFD_CLOEXEC)
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (go_r, go_w, res_r, res_w, job):
            os.close(fd)
        sock.send(_ERROR.pack(b"e", exc.errno or 0))
        return None
    if pid == 0:  # pragma: no cover - child
        reading, warm = ask not in (ASK_NOT_READING, ASK_COLD), ask != ASK_COLD
        child_main(ctx, go_r, job, res_w, pre, bind.bound if bind else None, reading, warm)
    pidfd = os.pidfd_open(pid)
    try:
        message = _CHILD.pack(b"c", pid, bind.generation if bind else 0)
        # socket.send_fds's own call, without its array: every object this process
        # touches while a child lives is a page it copies (3-5 fewer a fork)
        fds = _FDS.pack(go_w, job, res_r, pidfd)
        sock.sendmsg((message,), ((socket.SOL_SOCKET, socket.SCM_RIGHTS, fds),))
    finally:
        for fd in (go_r, go_w, res_r, res_w, job):
            os.close(fd)
    return pid, pidfd


def _call_globals(ctx: HelperContext) -> CallGlobals | None:
    """The globals every child's call starts from (forge.child), built once here;
    None if that failed (each child then builds its own and reports the failure)."""
    try:
        return prepare_call_globals(ctx)
    except Exception:
        return None


def _drop_caps(ctx: HelperContext) -> bool:
    """Empty this process's capability sets when running as root (forking, pidfds
    and its socket need none); False when that is not wanted or failed (each child
    then tries itself and reports a failure as its call's)."""
    if not (ctx.layers.drop_caps and os.geteuid() == 0):
        return False
    try:
        drop_capabilities()
    except OSError:
        return False
    return True


def _install_seccomp(ctx: HelperContext) -> bool:
    """Install the zygote's part of the stacked seccomp pair (forge.confine.seccomp):
    the whole filter but for forking, pidfds and the messages to the helper; its
    children inherit it and add the rest. False when seccomp is off or unavailable,
    or the install failed (each child then installs the whole filter itself)."""
    if not (ctx.layers.seccomp and ctx.seccomp is not None and ctx.seccomp_pair is not None):
        return False
    try:
        ctx.seccomp_pair[0].install()
    except OSError:
        return False
    return True


def _zygote_main(
    ctx: HelperContext, sock: socket.socket, helper_pid: int
) -> NoReturn:  # pragma: no cover - runs in the zygote process
    try:
        die_with_parent(helper_pid)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # children die with us, and inherit capability sets emptied once, here
        ctx = dataclasses.replace(ctx, helper_pid=os.getpid(), caps_dropped=_drop_caps(ctx))
        if ctx.layers.rlimits:
            with contextlib.suppress(OSError):  # lowering a limit does not fail
                forbid_priority_raise()  # the children inherit it
        for std in (0, 1, 2):  # not the helper's protocol pipes
            os.dup2(ctx.devnull, std)
        answers = (ctx.answer_fd,) if ctx.answer_fd >= 0 else ()  # the children answer on it
        keep = sorted({0, 1, 2, sock.fileno(), ctx.devnull, *ctx.read_fds, *answers})
        low = 0
        for fd in keep:
            if fd > low:
                close_range(low, fd - 1)
            low = fd + 1
        close_range(low, 0xFFFFFFFF)
        os.environ.clear()  # every child inherits an empty environment
        # the whole seccomp filter but for the calls this process makes; each child
        # adds the rest (forge.confine.seccomp)
        ctx = dataclasses.replace(ctx, seccomp_stacked=_install_seccomp(ctx))
        pre = _call_globals(ctx)
        gc.collect()
        gc.freeze()
        # epoll itself, not selectors: every object the zygote touches after a fork
        # is a page it copies while that child lives
        poll = select.epoll()
        poll.register(sock.fileno(), select.EPOLLIN)
        children: dict[int, int] = {}  # pidfd -> pid
        bind: Binding | None = None
        while True:
            for fd, _ in poll.poll():
                pid = children.pop(fd, 0)
                if not pid:
                    message = sock.recv(BIND_MAX)
                    if not message:
                        os._exit(0)
                    if message[:1] == b"w":
                        bind = _bind(message, bind)
                        continue
                    spawned = _fork_one(ctx, sock, pre, bind, message[:1])
                    if spawned is not None:
                        children[spawned[1]] = spawned[0]
                        poll.register(spawned[1], select.EPOLLIN)
                    continue
                _, status = os.waitpid(pid, 0)
                poll.unregister(fd)
                os.close(fd)
                sock.send(_EXIT.pack(b"x", pid, status))
    except BaseException:
        os._exit(1)

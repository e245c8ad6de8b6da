"""The helper's children waiting for a call: forked ahead of demand, one call each.

Up to `depth` children (`IDLE_CHILDREN` by default, never more than `MAX_DEPTH`)
wait or are on their way, forked from the zygote (forge.zygote) and already
half-prepared (forge.child). While no call is in flight they are asked for up to
`depth`; while calls are in flight (forking competes with them for the CPU), only
when fewer children wait than calls are in flight: one call in flight asks once
none waits, two callers keep two waiting (asking only once none waited left a
fifth to a third of two callers' calls waiting for a fork on the spot,
3-13 ms at p50; docs/security.md). The helper does not wait for them: each arrives
on the zygote's socket and is collected like an exit report. A call goes to one of
them; when none waits, the helper keeps the call until the next one arrives
(forge.worker), so neither asking for a child nor handing a call over ever waits
on the zygote (a stopped zygote stalls no call a waiting child can take). The
child's memfd is closed as it is handed over (its go pipe then carries only
answers to its own `net` requests), so no child is ever given a second call.

A waiting child warms its call's path (forge.child `_warm`), and the reading path
most tools take as well (`_warm_reading`: about 85 copied pages and 0.35 ms of CPU
a child), except while the helper's recent calls never named a way to read a file
(`ReadingHint`: `QUIET_CALLS` in a row): its next children are asked for without
it. The warm-up keeps nothing a call sees (tests/forge/test_warm_reading.py), so
this only moves that work: a call that reads, right after, finds its child's
reading path cold (as before session 33), and the children asked for after it
warm it again. A child asked for while the helper's calls overlap (the last call
started while the runner had another call of this helper in flight: `overlap`)
does not warm up at all: the warm-up shortens a call's path only when a core is
idle while the child waits, and it costs CPU of its own (about 0.3-0.5 ms a CSV
call's child, the call then copying those pages itself); calls that overlap keep
the cores busy (tests/forge/test_overlap_cold.py).

Once a call names the helper's workspace (`bind`), the zygote's later children
confine themselves to it while they wait (forge.zygote); a child confined to
another workspace (the directory was replaced, or its path now resolves
elsewhere) is never handed a call: it is killed when the binding changes.

With a lending socket (forge.protocol.lending), every waiting child confined to
the bound workspace is lent to the runner (`lend`), which writes a call's job
into it itself, one hop fewer (forge.runner). A lent child still counts as
waiting here; the runner then names it exactly once: handed (`take`: the helper
watches it from then on, as one it handed a call itself), given back for a call
that goes through the helper (`give_back`), or dropped (`drop`: killed; its
binding is no longer the call's workspace, or it died while waiting).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
from collections import deque
from collections.abc import Iterable, Iterator

from forge.confine.sched import CALL_SLICE_NS, set_slice
from forge.protocol.lending import encode_lend
from forge.zygote import Spawned, Zygote, kill

# children forked ahead of demand: with three, the child a call takes was forked two
# calls earlier and is prepared, so its preparation does not run beside that call
# (two concurrent callers on 2 cores; issue 26: 1.05-1.12x back to back, 1.12-1.16x
# calls/s with 2 callers against two, about 1.6 MiB of copied pages more per helper)
IDLE_CHILDREN = 3
# the cap per helper, that is per tenant (`depth` above it is lowered to it); in all,
# at most (forge.helper_pool.MAX_HELPERS + the spare) * depth children wait
MAX_DEPTH = 8
SPAWN_BACKOFF_S = 0.5
# calls in a row whose code names no way to read a file before the next children leave
# the reading path out of their warm-up (`ReadingHint`)
QUIET_CALLS = 4
# the names a tool reads files with (the gate's open and listdir, the os and pathlib
# shims) or parses what it read with (csv: `_warm_reading` walks a csv.DictReader too)
READING_NAMES = ("open", "listdir", "os", "pathlib", "Path", "csv")
# how marshal writes a short ASCII string (a name): its type byte (interned or not,
# with or without the reference flag), its length, its text
_SHORT_ASCII = (0x5A, 0xDA, 0x7A, 0xFA)
_READING = tuple(bytes((t, len(n))) + n.encode() for n in READING_NAMES for t in _SHORT_ASCII)
_JUDGED_MAX = 256  # codes whose judgement is kept (forge.code_cache keeps as many)


def may_read(code: bytes) -> bool:
    """Whether a tool's marshalled code names one of READING_NAMES (a name, an
    attribute or a string constant with exactly that text: more than it reads with,
    never less, for the tools the shims and the gate serve)."""
    return any(word in code for word in _READING)


class ReadingHint:
    """Whether a helper's next waiting children warm the reading path too: not once
    `quiet_calls` calls in a row named no way to read a file (`may_read`), again at
    the first that does. A hint for the warm-up alone: whatever it says, every call
    runs the same (tests/forge/test_reading_hint.py)."""

    def __init__(self, quiet_calls: int = QUIET_CALLS) -> None:
        self.quiet_calls = quiet_calls
        self.quiet = 0  # calls in a row that named no way to read a file
        self._judged: dict[bytes, bool] = {}  # code -> may_read (the cache's own bytes)

    @property
    def reading(self) -> bool:
        return self.quiet < self.quiet_calls

    def note(self, code: bytes) -> None:
        """A call of `code` (marshalled, forge.code_cache) is about to be handed over."""
        reads = self._judged.get(code)
        if reads is None:
            if len(self._judged) >= _JUDGED_MAX:
                self._judged.clear()
            reads = self._judged[code] = may_read(code)
        self.quiet = 0 if reads else self.quiet + 1


class ChildPool:
    def __init__(
        self,
        zygote: Zygote,
        call_slice_ns: int | None = CALL_SLICE_NS,
        depth: int = IDLE_CHILDREN,
    ) -> None:
        """`call_slice_ns`: the time slice a child asks for once handed its call
        (forge.confine.sched; None: the default slice, for measurements only).
        `depth`: children forked ahead of demand (at least one, at most MAX_DEPTH)."""
        self.zygote = zygote
        self.depth = min(max(1, depth), MAX_DEPTH)
        self.call_slice_ns = call_slice_ns
        self.idle: deque[Spawned] = deque()
        self.spawn_after = 0.0  # forking failed recently: not before this time
        self.binding: tuple[str, int, int] | None = None  # workspace, device, inode
        self.generation = 0  # of `binding` (0: none)
        self.failure: OSError | None = None  # the last failed fork, not yet reported
        self.hint = ReadingHint()  # whether the next children warm the reading path
        # the last call started beside another: the next children do not warm up
        # (`overlap`): calls that overlap keep the cores busy, and a warm-up only moves
        # a call's first page copies ahead of it while adding work of its own (about
        # 0.3-0.5 ms of CPU a CSV call's child, issue 26): CPU those calls wait for
        self.busy = False
        self.lent: dict[int, Spawned] = {}  # pid -> a child lent to the runner, not yet named
        self.dead: set[int] = set()  # lent children whose exit the zygote reported

    def waiting(self) -> int:
        """Children waiting for a call: here, or lent to the runner (and alive)."""
        return len(self.idle) + len(self.lent) - len(self.dead)

    def coming(self) -> int:
        """Children waiting, arrived but not collected, and asked for."""
        return self.waiting() + self.zygote.asked + len(self.zygote.born)

    def wanted(self, in_flight: int) -> bool:
        """Whether to ask for the next waiting child now: below `depth` with those on
        their way, and, while calls are in flight, only when fewer children wait
        here than calls are in flight (forking competes with those calls for the
        CPU; the children lent to the runner are for calls it has not sent yet)."""
        return self.coming() < self.depth and (not in_flight or len(self.idle) < in_flight)

    def lend(self, sock: socket.socket) -> None:
        """Once the newest waiting child is confined to the bound workspace, lend the
        runner the older ones that are too (each one's go pipe and job memfd; this
        process keeps its own copies) and kill the older ones that are not (forked
        before the binding: the runner cannot take them; once per helper). The newest
        stays here for a call that comes through this process. So at most `depth` - 1
        are lent, a call that waits here always has a child on its way, and the child
        kept here follows the reading hint best. Never blocks: a child the socket has
        no room for stays here."""
        if self.binding is None or self.generation <= 0 or not self.idle:
            return
        older = list(self.idle)
        newest = older.pop()
        if not older or newest.bound != self.generation:
            return  # nothing to lend, or the newest is not confined yet: wait for one that is
        path, dev, ino = self.binding
        self.idle = deque([newest])
        for child in older:
            if child.bound != self.generation:
                discard(child)  # not confined to the workspace (or to an old one)
                continue
            message = encode_lend(child.pid, child.bound, dev, ino, path)
            try:
                fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _FDS.pack(child.go, child.job))]
                sock.sendmsg((message,), fds, socket.MSG_DONTWAIT)
            except OSError:
                self.idle.appendleft(child)  # no room: it waits here
                continue
            self.lent[child.pid] = child

    def take(self, pid: int) -> Spawned | None:
        """The lent child `pid`, which the runner handed a call (None: none such). Its
        memfd is closed here: it can never be given another."""
        child = self.lent.pop(pid, None)
        if child is None:
            return None
        self.dead.discard(pid)
        os.close(child.job)
        return child

    def give_back(self, pid: int) -> None:
        """The runner gives lent child `pid` back, unused, for the call that comes with
        it: it goes first among the waiting children (`hand_over` checks its binding
        as any other's)."""
        child = self.lent.pop(pid, None)
        if child is not None:
            if pid in self.dead:
                self.dead.discard(pid)
                discard(child)
            else:
                self.idle.appendleft(child)

    def drop(self, pid: int) -> None:
        """The runner will never use lent child `pid`: kill it."""
        child = self.lent.pop(pid, None)
        if child is not None:
            self.dead.discard(pid)
            discard(child)

    def exited(self, pid: int) -> bool:
        """The zygote reported `pid`'s exit: True when it is a lent child (which the
        runner may have handed a call already: that call's outcome then needs this
        exit status)."""
        if pid in self.lent:
            self.dead.add(pid)
            return True
        return False

    def overlap(self, busy: bool) -> None:
        """A call starts; `busy`: the runner had another call of this helper in flight
        then. While the last call to start was such a one, the children asked for do
        not warm up (`refill`)."""
        self.busy = busy

    def refill(self) -> None:
        """Ask the zygote for one more waiting child, without waiting for it; one that
        does not warm up at all while calls overlap (`overlap`)."""
        try:
            self.zygote.ask(reading=self.hint.reading, warm=not self.busy)
        except OSError:
            self.spawn_after = time.monotonic() + SPAWN_BACKOFF_S

    def top_up(self, in_flight: int) -> float | None:
        """Ask for the children `wanted` now, without waiting for them; seconds until
        asking may be tried again after a failed fork (None: nothing left to ask for)."""
        while self.wanted(in_flight):
            wait = self.spawn_after - time.monotonic()
            if wait > 0:
                return wait
            self.refill()
        return None

    def collect(self) -> bool:
        """Take the children and exit reports the zygote has sent (never blocks);
        False when the zygote is gone. A failed fork backs off for SPAWN_BACKOFF_S
        and is kept in `failure` (for the call waiting for that child)."""
        try:
            alive = self.zygote.read_reports()
        except OSError as exc:
            self.spawn_after = time.monotonic() + SPAWN_BACKOFF_S
            self.failure = exc
            alive = True
        while self.zygote.born:
            self.idle.append(self.zygote.born.popleft())
        return alive

    def bind(self, workspace: str, dev: int, ino: int) -> None:
        """The workspace of the call about to be handed over (resolved, and the device
        and inode of that directory): if it is not the one bound already, later
        children confine themselves to it while they wait, and waiting children
        confined to another are killed."""
        if self.binding == (workspace, dev, ino):
            return
        try:
            self.generation = self.zygote.bind(workspace, dev, ino)
        except OSError:  # no zygote: the next fork finds out
            self.generation = -1  # matches no child
        self.binding = (workspace, dev, ino)
        self.idle = deque(self._usable(self.idle))

    def _usable(self, children: Iterable[Spawned]) -> Iterator[Spawned]:
        """The children of `children` that may take a call in the bound workspace (those
        not confined to a workspace, or to this one); the others are killed."""
        for child in children:
            if self._fits(child):
                yield child
            else:
                discard(child)

    def _fits(self, child: Spawned) -> bool:
        """Not confined to a workspace, or to the bound one."""
        return child.bound in (0, self.generation)

    def hand_over(self, data: bytes) -> Spawned | None:
        """Give one call to a waiting child; None when none waits (the caller keeps
        the call until `collect` brings one: this never waits on the zygote). That
        child's memfd is closed here, so it can never be given another (the caller
        keeps its go pipe for the broker's answers and closes it when the call ends)."""
        for child in self._usable(self._waiting()):
            try:
                view = memoryview(data)
                offset = 0
                while offset < len(view):
                    offset += os.pwrite(child.job, view[offset:], offset)
                # its call is on the caller's path now: it wakes up ahead of the work
                # in the background (the next child's fork and preparation)
                if self.call_slice_ns is not None:
                    set_slice(child.pid, self.call_slice_ns)
                os.write(child.go, b"g")
            except OSError:  # it died while waiting (OOM killer, signal): use another
                discard(child)
                continue
            os.close(child.job)  # the go pipe stays open for the broker's answers
            return child
        return None

    def _waiting(self) -> Iterator[Spawned]:
        while self.idle:
            yield self.idle.popleft()

    def close(self) -> None:
        """Kill every waiting child (and those that arrived but were not taken yet)."""
        while self.zygote.born:
            self.idle.append(self.zygote.born.popleft())
        while self.idle:
            discard(self.idle.popleft())
        while self.lent:
            discard(self.lent.popitem()[1])
        self.dead.clear()


_FDS = struct.Struct("2i")  # a lent child's go pipe and job memfd, as SCM_RIGHTS carries them


def discard(child: Spawned) -> None:
    kill(child.pidfd)
    for fd in child.fds():
        with contextlib.suppress(OSError):
            os.close(fd)

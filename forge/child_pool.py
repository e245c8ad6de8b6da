"""The helper's children waiting for a call: forked ahead of demand, one call each.

Up to `depth` (`IDLE_CHILDREN` by default) children, forked from the zygote
(forge.zygote) and already half-prepared (forge.child), wait; they are asked for while the helper
has no call in flight (forking competes for the CPU, so it is not started while
a reply may be due), and the helper does not wait for them: each arrives on the
zygote's socket and is collected like an exit report. A call goes to one of
them, or to a child forked on the spot when none waits; its go pipe and memfd
are closed as it is handed over (its go pipe then carries only answers to its
own `net` requests), so no child is ever given a second call.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque

from forge.confine.sched import CALL_SLICE_NS, set_slice
from forge.zygote import Spawned, Zygote, kill

# children forked ahead of demand: with three, the child a call takes was forked two
# calls earlier and is prepared, so its preparation does not run beside that call
# (two concurrent callers on 2 cores; issue 26: 1.05-1.12x back to back, 1.12-1.16x
# calls/s with 2 callers against two, about 1.6 MiB of copied pages more per helper)
IDLE_CHILDREN = 3
SPAWN_BACKOFF_S = 0.5


class ChildPool:
    def __init__(
        self,
        zygote: Zygote,
        call_slice_ns: int | None = CALL_SLICE_NS,
        depth: int = IDLE_CHILDREN,
    ) -> None:
        """`call_slice_ns`: the time slice a child asks for once handed its call
        (forge.confine.sched; None: the default slice, for measurements only).
        `depth`: children forked ahead of demand (at least one)."""
        self.zygote = zygote
        self.depth = max(1, depth)
        self.call_slice_ns = call_slice_ns
        self.idle: deque[Spawned] = deque()
        self.spawn_after = 0.0  # forking failed recently: not before this time

    def spawn(self) -> Spawned:
        """A new child from the zygote that prepares itself and waits for one call
        (one already asked for, or a new one): waits for it."""
        try:
            return self.zygote.fork_child()
        except ConnectionError:
            raise SystemExit(1) from None  # no zygote, no children: the runner restarts us

    def wanted(self, busy: bool) -> bool:
        """Whether to ask for the next waiting child now: below `depth` with
        those on their way, and only while no call is in flight (`busy`), unless no
        child waits at all."""
        coming = len(self.idle) + self.zygote.asked + len(self.zygote.born)
        return coming < self.depth and (not busy or not self.idle)

    def refill(self) -> None:
        """Ask the zygote for one more waiting child, without waiting for it."""
        try:
            self.zygote.ask()
        except OSError:
            self.spawn_after = time.monotonic() + SPAWN_BACKOFF_S

    def collect(self) -> bool:
        """Take the children and exit reports the zygote has sent (never blocks);
        False when the zygote is gone. A failed fork backs off for SPAWN_BACKOFF_S."""
        try:
            alive = self.zygote.read_reports()
        except OSError:
            self.spawn_after = time.monotonic() + SPAWN_BACKOFF_S
            alive = True
        while self.zygote.born:
            self.idle.append(self.zygote.born.popleft())
        return alive

    def hand_over(self, data: bytes) -> Spawned:
        """Give one call to a waiting child (forking one if none waits); that child's
        memfd is closed here, so it can never be given another (the caller keeps its
        go pipe for the broker's answers and closes it when the call ends)."""
        for _ in range(3):
            child = self.idle.popleft() if self.idle else self.spawn()
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
        raise OSError("no sandbox child could be started")

    def close(self) -> None:
        """Kill every waiting child (and those that arrived but were not taken yet)."""
        while self.zygote.born:
            self.idle.append(self.zygote.born.popleft())
        while self.idle:
            discard(self.idle.popleft())


def discard(child: Spawned) -> None:
    kill(child.pidfd)
    for fd in child.fds():
        with contextlib.suppress(OSError):
            os.close(fd)

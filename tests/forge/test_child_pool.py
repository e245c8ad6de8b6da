"""When a helper asks its zygote for the next waiting child, and the cap on them
(forge.child_pool): up to `depth` while no call is in flight; while calls are in
flight, only when fewer children wait than calls are in flight; never more than
`depth` waiting or on their way, and `depth` never above MAX_DEPTH; neither a
hand-over nor an ask ever waits on the zygote. A fake zygote counts the asks (no
process is forked)."""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from typing import cast

import pytest

from forge.child_pool import IDLE_CHILDREN, MAX_DEPTH, SPAWN_BACKOFF_S, ChildPool
from forge.zygote import Spawned, Zygote
from tests.waits import HANG_S


class FakeZygote:
    """Counts the children asked for; `arrive` delivers them."""

    def __init__(self, fail: bool = False) -> None:
        self.asked = 0
        self.born: deque[Spawned] = deque()
        self.fail = fail
        self.pids = iter(range(1000, 2000))
        self.kinds: list[tuple[bool, bool]] = []  # (reading, warm) of each ask

    def ask(self, reading: bool = True, warm: bool = True) -> None:
        if self.fail:
            raise OSError("no fork")
        self.asked += 1
        self.kinds.append((reading, warm))

    def arrive(self, pool: ChildPool) -> None:
        """Every child asked for arrives and is collected as waiting."""
        while self.asked:
            self.asked -= 1
            pool.idle.append(Spawned(next(self.pids), -1, -1, -1, -1))


def pool_of(zygote: FakeZygote, depth: int = IDLE_CHILDREN) -> ChildPool:
    return ChildPool(cast(Zygote, zygote), None, depth)


def test_with_no_call_in_flight_it_asks_up_to_the_depth() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    assert pool.top_up(0) is None
    assert zygote.asked == 3
    pool.top_up(0)
    assert zygote.asked == 3  # on their way count
    zygote.arrive(pool)
    pool.top_up(0)
    assert zygote.asked == 0 and len(pool.idle) == 3


def test_one_call_in_flight_asks_only_once_none_waits() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    pool.top_up(0)
    zygote.arrive(pool)
    pool.idle.popleft()  # a call takes one: two wait
    pool.top_up(1)
    assert zygote.asked == 0  # forking would compete with the call
    pool.idle.popleft()
    pool.top_up(1)
    assert zygote.asked == 0  # one still waits
    pool.idle.popleft()
    pool.top_up(1)
    assert zygote.asked == 3  # none waits: up to the depth


def test_two_calls_in_flight_keep_two_children_waiting() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    pool.top_up(0)
    zygote.arrive(pool)
    pool.idle.popleft()
    pool.idle.popleft()  # two calls took one each: one waits
    pool.top_up(2)
    assert zygote.asked == 2  # fewer wait than calls are in flight
    zygote.arrive(pool)
    assert len(pool.idle) == 3


@pytest.mark.parametrize("in_flight", [0, 1, 2, 5, 50])
def test_never_more_than_the_depth_wait_or_are_on_their_way(in_flight: int) -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    for _ in range(20):
        pool.top_up(in_flight)
        assert pool.coming() <= 3
        zygote.arrive(pool)
        assert pool.coming() <= 3
        if pool.idle:
            pool.idle.popleft()


def test_the_depth_is_capped_per_helper() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 1000)
    assert pool.depth == MAX_DEPTH
    pool.top_up(0)
    assert zygote.asked == MAX_DEPTH
    assert pool_of(FakeZygote(), 0).depth == 1


def test_a_failed_ask_backs_off() -> None:
    zygote = FakeZygote(fail=True)
    pool = pool_of(zygote, 3)
    wait = pool.top_up(2)
    assert wait is not None and 0 < wait <= SPAWN_BACKOFF_S
    assert pool.spawn_after > time.monotonic()


def test_with_no_child_waiting_the_hand_over_returns_without_the_zygote() -> None:
    """The call then waits in the helper for the next child (forge.worker); the fake
    zygote has no way to fork on the spot, so a hand-over that asked it would fail."""
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    assert pool.hand_over(b"job") is None
    assert zygote.asked == 0


def test_asking_a_zygote_that_reads_nothing_never_blocks() -> None:
    """A stopped zygote reads no ask: once its socket is full, `ask` raises
    BlockingIOError (the pool backs off) instead of stalling the helper."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote = Zygote(0, mine)
    outcome: list[BaseException] = []

    def fill() -> None:
        try:
            for _ in range(1_000_000):
                zygote.ask()
        except OSError as exc:
            outcome.append(exc)

    asker = threading.Thread(target=fill, daemon=True)
    try:
        asker.start()
        asker.join(HANG_S)
    finally:
        theirs.close()  # a blocked send ends (EPIPE) if it ever blocked
        asker.join(HANG_S)
        mine.close()
    assert outcome and isinstance(outcome[0], BlockingIOError), outcome
    assert zygote.asked > 0  # the asks that fitted were counted


def test_while_calls_overlap_the_children_asked_for_do_not_warm_up() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    pool.top_up(0)
    assert zygote.kinds == [(True, True)] * 3
    zygote.kinds.clear()
    pool.overlap(True)  # a call started while another of this helper was in flight
    zygote.arrive(pool)
    pool.idle.clear()  # both taken
    pool.top_up(2)
    assert zygote.kinds and all(kind == (True, False) for kind in zygote.kinds), zygote.kinds
    zygote.kinds.clear()
    pool.overlap(False)  # the next call started alone: warmed ones again
    zygote.arrive(pool)
    pool.idle.clear()
    pool.top_up(0)
    assert zygote.kinds and all(kind == (True, True) for kind in zygote.kinds), zygote.kinds

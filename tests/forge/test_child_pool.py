"""When a helper asks its zygote for the next waiting child, and the cap on them
(forge.child_pool): up to `depth` while no call is in flight (while a child waits,
once the helper has had no call for REFILL_QUIET_S); while calls are in
flight, only when fewer children wait than calls are in flight; never more than
`depth` waiting or on their way, and `depth` never above MAX_DEPTH. A fake zygote
counts the asks (no process is forked)."""

from __future__ import annotations

import time
from collections import deque
from typing import cast

import pytest

from forge.child_pool import IDLE_CHILDREN, MAX_DEPTH, REFILL_QUIET_S, SPAWN_BACKOFF_S, ChildPool
from forge.zygote import Spawned, Zygote


class FakeZygote:
    """Counts the children asked for; `arrive` delivers them."""

    def __init__(self, fail: bool = False) -> None:
        self.asked = 0
        self.born: deque[Spawned] = deque()
        self.fail = fail
        self.pids = iter(range(1000, 2000))

    def ask(self) -> None:
        if self.fail:
            raise OSError("no fork")
        self.asked += 1

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


def test_right_after_a_call_the_next_are_asked_for_once_it_is_quiet() -> None:
    """Calls back to back (a turn's) find their children waiting without the
    replacements' forks beside them: while one waits, nothing is asked for until
    the helper has had no call for REFILL_QUIET_S."""
    zygote = FakeZygote()
    pool = pool_of(zygote, 3)
    pool.top_up(0)
    zygote.arrive(pool)
    pool.idle.popleft()  # a call took one and just ended: two wait
    wait = pool.top_up(0, quiet=0.0)
    assert zygote.asked == 0 and wait == REFILL_QUIET_S
    wait = pool.top_up(0, quiet=REFILL_QUIET_S / 4)
    assert zygote.asked == 0 and wait == pytest.approx(REFILL_QUIET_S * 3 / 4)
    assert pool.top_up(0, quiet=REFILL_QUIET_S) is None
    assert zygote.asked == 1  # quiet long enough: up to the depth


def test_with_none_waiting_it_asks_at_once_after_a_call() -> None:
    zygote = FakeZygote()
    pool = pool_of(zygote, 2)
    pool.top_up(0)
    zygote.arrive(pool)
    pool.idle.clear()  # two calls took both
    assert pool.top_up(0, quiet=0.0) is None
    assert zygote.asked == 2


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

"""The helper (forge.worker) does not spin while its zygote is stopped.

A child that sent its result lingers in `exiting` until the zygote reports its
exit; past LINGER_S it is killed. A stopped zygote never reports it, and the
helper used to re-send SIGKILL and wake every 10 ms for as long as it stayed
stopped. Here the helper's loop is driven with a simulated clock (nothing ever
arrives: the zygote is stopped), so its wake-ups and kills are counted, not
timed.
"""

from __future__ import annotations

import os
import selectors
from collections import deque
from types import SimpleNamespace
from typing import Any

import pytest

from forge import worker
from forge.layers import Layers
from forge.replies import InFlight
from forge.zygote import Spawned

SPAN_S = 10 * worker.LINGER_S  # simulated time the zygote stays stopped


class StoppedZygote:
    """What the helper sees of a stopped zygote: asks are queued, nothing comes."""

    def __init__(self) -> None:
        self.asked = 0
        self.exits: list[tuple[int, int]] = []
        self.born: deque[Spawned] = deque()

    def ask(self, reading: bool = True, warm: bool = True) -> None:
        self.asked += 1


def test_a_lingering_child_is_killed_once_and_wakes_a_stopped_zygotes_helper_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(worker, "time", SimpleNamespace(monotonic=lambda: now[0]))
    kills: list[int] = []
    monkeypatch.setattr(worker, "kill", kills.append)
    ctx: Any = SimpleNamespace(layers=Layers())
    zygote: Any = StoppedZygote()
    helper = worker.Helper(ctx, {}, zygote, call_slice_ns=None)
    result, go = os.pipe(), os.pipe()
    os.close(go[0])
    call = InFlight(7, 4321, 99, result[0], now[0] + 5.0, now[0], 100, go=go[1])
    helper.pending[result[0]] = call
    helper.sel.register(result[0], selectors.EVENT_READ, "child")
    helper.finish(call, b"{}", send=False)  # it answered the runner; its exit never comes
    os.close(result[1])

    wakeups = 0
    start = now[0]
    while now[0] < start + SPAN_S:
        timeout = helper.plan()
        if timeout is None:  # nothing left to wait for but events: select() sleeps
            break
        now[0] += timeout  # no event comes
        wakeups += 1
    assert kills == [99]  # through its pidfd, once
    assert wakeups <= 2, wakeups  # at LINGER_S (and one after it at most), not every 10 ms
    assert not helper.lingering()  # a helper told to close need not wait for it

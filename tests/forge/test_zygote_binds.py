"""Rebinding the zygote to a workspace never blocks the helper (forge.zygote).

A stopped zygote reads nothing, so its socket fills up (a few asks and bindings:
net.unix.max_dgram_qlen messages). A binding sent then used to block the helper
until the zygote read again; now it waits in the helper (only the latest counts)
and goes before the next fork request, so the children forked for the new
workspace are forked with it. Here the zygote is the other end of a socket pair
that nobody reads until the test says so.
"""

from __future__ import annotations

import socket
import threading

import pytest

from forge.child_pool import ChildPool
from forge.zygote import _BIND, BIND_MAX, Zygote
from tests.waits import until


def fill(sock: socket.socket) -> int:
    """Send fork requests until `sock` has no room left; how many were sent."""
    sent = 0
    while True:
        try:
            sock.send(b"f", socket.MSG_DONTWAIT)
        except BlockingIOError:
            return sent
        sent += 1


async def test_rebinds_to_a_silent_zygote_do_not_block_and_precede_the_next_fork() -> None:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        zygote = Zygote(0, mine)  # `mine` blocking, as the helper's
        pool = ChildPool(zygote, call_slice_ns=None)
        queued = fill(mine)
        done = threading.Event()

        def rebind() -> None:
            for n in range(3):  # the workspace's directory replaced, again and again
                pool.bind(f"/srv/ws{n}", 7, 100 + n)
            done.set()

        threading.Thread(target=rebind, daemon=True).start()
        await until(done.is_set, "the rebinds return")
        assert pool.generation == zygote.generation == 3  # not -1: no zygote
        with pytest.raises(BlockingIOError):  # still no room: nothing goes past the binding
            zygote.ask()
        assert zygote.asked == 0
        assert [theirs.recv(BIND_MAX) for _ in range(queued)] == [b"f"] * queued  # it reads
        zygote.ask()
        bind, fork = theirs.recv(BIND_MAX), theirs.recv(BIND_MAX)
        assert _BIND.unpack_from(bind) == (b"w", 3, 7, 102) and bind[_BIND.size :] == b"/srv/ws2"
        assert fork == b"f" and zygote.asked == 1
        theirs.setblocking(False)
        with pytest.raises(BlockingIOError):  # the bindings replaced never went out
            theirs.recv(BIND_MAX)
    finally:
        theirs.close()  # a send still blocked (the test failing) ends
        mine.close()

"""The audit writer as a process of its own: `python -m bridge.audit.writer_process FD`.

It shares no GIL with the daemon's loop. FD is its end of a socketpair; the
first frame names the chain (path, HMAC key, names key, max batch: the key
comes over the socket, never on the command line). It opens the chain as
the thread writer does (`AuditChain._open_sync`: lock, torn-tail repair,
head file) and answers `("open", None)` or `("open", "ChainCorrupt", why)`.
Then each frame `(id, [(event, tenant, details, ts), ...])` is a batch the
loop waits for: whatever frames have arrived are appended under the chain
lock, fdatasynced once (group commit), acknowledged `(id, last_seq,
batches)` right after the sync, and the head moved; a failed append answers
`(id, None, kind, message)` for every batch it held. EOF on the socket is
the shutdown: what was received is written, the head synced, and it exits.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from bridge.audit.chain import AuditChain, _Pending
from bridge.audit.frames import frame, split
from bridge.audit.store import exclusive

log = logging.getLogger(__name__)


def _recv_frames(sock: socket.socket, buf: bytearray) -> list[Any] | None:
    """Block for at least one complete frame; None at EOF with nothing left."""
    while True:
        frames = split(buf)
        if frames:
            return frames
        data = sock.recv(1 << 20)
        if not data:
            return None
        buf += data


def serve(sock: socket.socket) -> None:
    buf = bytearray()
    first = _recv_frames(sock, buf)
    if not first:
        return
    path, key, names_key, max_batch = first.pop(0)
    chain = AuditChain(Path(path), key, max_batch=max_batch, names_key=names_key)
    try:
        chain._open_sync()
    except Exception as exc:
        sock.sendall(frame(("open", type(exc).__name__, str(exc))))
        return
    sock.sendall(frame(("open", None)))
    queued: list[Any] = first
    try:
        while True:
            if not queued:
                got = _recv_frames(sock, buf)
                if got is None:
                    return  # EOF: the shutdown, everything received is written
                queued = got
            _drain(sock, buf, queued)  # what else has arrived joins this batch
            _commit(chain, sock, queued[: chain._max_batch])
            del queued[: chain._max_batch]
    finally:
        chain._close_fds()


def _drain(sock: socket.socket, buf: bytearray, queued: list[Any]) -> None:
    while True:
        try:
            data = sock.recv(1 << 20, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        if not data:
            return  # EOF: the next blocking read says so
        buf += data
        queued.extend(split(buf))


def _commit(chain: AuditChain, sock: socket.socket, batches: list[Any]) -> None:
    pending: list[_Pending] = []
    owners: list[tuple[int, int]] = []  # (batch id, its events)
    for item in batches:
        bid, events = item
        for event, tenant, details, ts in events:
            pending.append(_Pending(event, tenant, details, ts))
        owners.append((bid, len(events)))
    acked = False

    def durable(seqs: list[int]) -> None:
        nonlocal acked
        out, i = [], 0
        for bid, n in owners:
            i += n
            out.append(frame((bid, seqs[i - 1], chain.batches)))
        sock.sendall(b"".join(out))
        acked = True

    try:
        with exclusive(chain._lock_fd):
            chain._commit(pending, durable)
    except Exception as exc:
        log.error("audit append failed: %s", exc)
        if not acked:
            kind, why = type(exc).__name__, str(exc)
            sock.sendall(b"".join(frame((bid, None, kind, why)) for bid, _ in owners))


def main() -> None:
    # Its life is the socket's: a stop signal to the daemon's process group (Ctrl-C, systemd's
    # SIGTERM) must not end it before the daemon's shutdown has sent its last batch; EOF does.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="audit-writer: %(message)s")
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        serve(sock)
    finally:
        sock.close()


if __name__ == "__main__":
    main()

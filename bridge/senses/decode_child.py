"""The decoder process: one untrusted file, read confined, answered as bytes, then gone.

Started by the daemon (`decoders.DecoderPool`) as `python -I` with an empty
environment, stdin a `SOCK_SEQPACKET` socket, stdout a pipe, stderr
/dev/null. It imports Pillow's four formats and pypdf, confines itself
(`decode_confine`), writes its ready frame and blocks until the daemon
hands it exactly one job with the file's descriptor. It then sets the
job's CPU limit and alarm, reads the file, does the job (`decode_image`,
`pdf`, `decode_text`), writes one reply frame and exits: a process never
reads a second file, so nothing of one file (nor the memory it took)
outlives it. Every failure is a reply (`{"ok": false, "why": ...}`) when
the process is still able to write one; the daemon treats silence as the
worst (killed, crashed or out of time).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from bridge.senses.decode_confine import confine, limit_cpu
from bridge.senses.decode_image import Unreadable, downscale
from bridge.senses.decode_text import read_text
from bridge.senses.decode_wire import JOB_MAX, Job, frame
from bridge.senses.pdf import OutOfTime, pdf_text


def _alarm(signum: int, frame_: FrameType | None) -> None:
    raise OutOfTime()


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _read_all(fd: int, limit: int) -> bytes:
    """The whole file (the daemon checked its size; this checks again)."""
    if os.fstat(fd).st_size > limit:
        raise Unreadable("size")
    chunks, got = [], 0
    while chunk := os.read(fd, 1 << 20):
        got += len(chunk)
        if got > limit:
            raise Unreadable("size")
        chunks.append(chunk)
    return b"".join(chunks)


def _image(data: bytes, job: Job) -> tuple[dict[str, object], bytes]:
    mime, blob = downscale(data, job)
    return {"ok": True, "mime": mime}, blob


def _pdf(data: bytes, job: Job) -> tuple[dict[str, object], bytes]:
    return {"ok": True, **pdf_text(data, job)}, b""


def _text(data: bytes, job: Job) -> tuple[dict[str, object], bytes]:
    return {"ok": True, **read_text(data, job)}, b""


OPS: dict[str, Callable[[bytes, Job], tuple[dict[str, object], bytes]]] = {
    "image": _image,
    "pdf": _pdf,
    "text": _text,
}


def run(job: Job, fd: int) -> bytes:
    """The reply frame for one job."""
    try:
        data = _read_all(fd, job.max_bytes)
        os.close(fd)
        header, blob = OPS[job.op](data, job)
        return frame(header, blob)
    except Unreadable as exc:
        return frame({"ok": False, "why": exc.why, **exc.details})
    except OutOfTime:
        return frame({"ok": False, "why": "time"})
    except MemoryError:
        return frame({"ok": False, "why": "memory"})
    except RecursionError:
        return frame({"ok": False, "why": "damaged"})


def main() -> NoReturn:  # pragma: no cover - runs in the decoder process
    try:
        sock = socket.socket(fileno=0)
        memory = int(sys.argv[2])
        missing = confine(os.getppid(), memory)
        _write(frame({"ready": True, "missing": missing}))
        message, fds, _, _ = socket.recv_fds(sock, JOB_MAX, 1)
        if not message or len(fds) != 1:
            os._exit(2)
        job = Job.decode(message)
        limit_cpu(job.seconds)
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, job.seconds)
        reply = run(job, fds[0])
        signal.setitimer(signal.ITIMER_REAL, 0)
        _write(reply)
        os._exit(0)
    except BaseException:
        os._exit(1)

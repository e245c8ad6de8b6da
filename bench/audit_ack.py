"""One appended line made durable and acknowledged to an asyncio loop, five ways (issue 26).

The audit writer acknowledges a batch through two thread wake-ups (loop -> writer thread,
writer -> loop through `call_soon_threadsafe`). This bench asks whether the kernel could
signal the sync's completion to the loop with no Python thread in between:

- (a) thread: as `bridge.audit.chain` does; a writer thread runs the writer's Python
  (`--writer` ms: fit, encode, head), writes the line and `fdatasync`s it, then
  `call_soon_threadsafe` back to the loop.
- (b) aio: the loop runs the writer's Python, writes the line and submits a Linux native
  AIO `IOCB_CMD_FDSYNC` (`io_submit`, Linux >= 4.18) with `IOCB_FLAG_RESFD`: an eventfd
  watched with `loop.add_reader` turns readable once the sync is done. The kernel runs it
  as `vfs_fsync(file, datasync=1)` (what `fdatasync` runs) from `schedule_work`, on a
  kworker of the submitting CPU; its result (0 or -errno) is the event's `res`.
- (d) uring: the same through io_uring (`IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC`,
  an eventfd registered with `IORING_REGISTER_EVENTFD`); the kernel punts the sync to
  an io-wq worker of the process (`vfs_fsync_range` over the whole file).
- (e) sync thread: the loop runs the writer's Python and writes; a thread only
  `fdatasync`s and wakes the loop.
- (c) inline: the loop does it all and `fdatasync`s itself, blocking: the floor.

Each is driven in four shapes: the loop idle while the sync runs; a turn's end (the loop
runs `--work` ms of Python in six slices with a GIL-releasing call between them, as a
turn's end unit does, after queueing and before awaiting, and the writer's `--writer` ms);
and a busy loop (a task keeps the loop running 0.03 ms or 0.3 ms callbacks all the time).
The ways alternate sync by sync in one process, so the host's load falls on each alike,
and every file is checked to hold every line. Prints p50/p90/p99 of the round trip, CPU
per sync (the process, and the loop's thread; not for a busy loop, whose spinner's CPU
would count) and each way's p50 minus (a)'s. No thresholds. A way the kernel refuses
(no AIO, io_uring disabled) is left out and says why.

Run: PYTHONPATH=$PWD .venv/bin/python -m bench.audit_ack [--syncs 1000] [--dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import mmap
import os
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

# x86_64 and aarch64 system call numbers (the same for io_uring; AIO's differ).
_SYSCALLS = {
    "x86_64": {"io_setup": 206, "io_destroy": 207, "io_getevents": 208, "io_submit": 209},
    "aarch64": {"io_setup": 0, "io_destroy": 1, "io_submit": 2, "io_getevents": 4},
}
_URING_SETUP, _URING_ENTER, _URING_REGISTER = 425, 426, 427
LINE = (
    b'{"details": {"chars": 12, "ms": 3, "outcome": "ok"}, "event": "message.answered", '
    b'"hash": "' + b"a" * 64 + b'", "prev": "' + b"b" * 64 + b'", "seq": 1234, '
    b'"tenant": "alice", "ts": 1765000000000}\n'
)


def _libc() -> Any:
    lib = ctypes.CDLL(None, use_errno=True)
    lib.syscall.restype = ctypes.c_long
    return lib


def _fail(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


class _Iocb(ctypes.Structure):  # linux/aio_abi.h, little-endian
    _fields_ = [
        ("aio_data", ctypes.c_uint64),
        ("aio_key", ctypes.c_uint32),
        ("aio_rw_flags", ctypes.c_int32),
        ("aio_lio_opcode", ctypes.c_uint16),
        ("aio_reqprio", ctypes.c_int16),
        ("aio_fildes", ctypes.c_uint32),
        ("aio_buf", ctypes.c_uint64),
        ("aio_nbytes", ctypes.c_uint64),
        ("aio_offset", ctypes.c_int64),
        ("aio_reserved2", ctypes.c_uint64),
        ("aio_flags", ctypes.c_uint32),
        ("aio_resfd", ctypes.c_uint32),
    ]


class _IoEvent(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_uint64),
        ("obj", ctypes.c_uint64),
        ("res", ctypes.c_int64),
        ("res2", ctypes.c_int64),
    ]


IOCB_CMD_FDSYNC, IOCB_FLAG_RESFD = 3, 1


class Completions(Protocol):
    efd: int

    def submit_fdsync(self, fd: int) -> None: ...
    def reap(self) -> list[int]: ...
    def close(self) -> None: ...


class NativeAio:
    """A Linux AIO context whose completions make an eventfd readable."""

    def __init__(self) -> None:
        numbers = _SYSCALLS.get(os.uname().machine)
        if numbers is None:
            raise OSError(f"no AIO system call numbers for {os.uname().machine}")
        self._nr, self._lib = numbers, _libc()
        self._ctx = ctypes.c_ulong(0)
        if self._lib.syscall(numbers["io_setup"], ctypes.c_long(8), ctypes.byref(self._ctx)):
            raise _fail("io_setup")
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._iocb = _Iocb()
        self._ptrs = (ctypes.POINTER(_Iocb) * 1)(ctypes.pointer(self._iocb))
        self._events = (_IoEvent * 8)()
        self._now = (ctypes.c_long * 2)(0, 0)  # a zero timeout: never waits

    def submit_fdsync(self, fd: int) -> None:
        cb = self._iocb
        ctypes.memset(ctypes.byref(cb), 0, ctypes.sizeof(cb))
        cb.aio_lio_opcode, cb.aio_fildes = IOCB_CMD_FDSYNC, fd
        cb.aio_flags, cb.aio_resfd = IOCB_FLAG_RESFD, self.efd
        if self._lib.syscall(self._nr["io_submit"], self._ctx, ctypes.c_long(1), self._ptrs) != 1:
            raise _fail("io_submit")

    def reap(self) -> list[int]:
        n = self._lib.syscall(
            self._nr["io_getevents"], self._ctx, ctypes.c_long(0), ctypes.c_long(8),
            self._events, self._now,
        )  # fmt: skip
        if n < 0:
            raise _fail("io_getevents")
        return [int(self._events[i].res) for i in range(n)]

    def close(self) -> None:
        self._lib.syscall(self._nr["io_destroy"], self._ctx)
        os.close(self.efd)


def _u32_fields(*names: str) -> list[tuple[str, Any]]:
    return [(name, ctypes.c_uint32) for name in names]


class _SqOff(ctypes.Structure):
    _fields_ = [
        *_u32_fields("head", "tail", "mask", "entries", "flags", "dropped", "array", "resv1"),
        ("user_addr", ctypes.c_uint64),
    ]


class _CqOff(ctypes.Structure):
    _fields_ = [
        *_u32_fields("head", "tail", "mask", "entries", "overflow", "cqes", "flags", "resv1"),
        ("user_addr", ctypes.c_uint64),
    ]


class _Params(ctypes.Structure):
    _fields_ = [
        *_u32_fields("sq_entries", "cq_entries", "flags", "cpu", "idle", "features", "wq_fd"),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", _SqOff),
        ("cq_off", _CqOff),
    ]


class _Sqe(ctypes.Structure):
    _fields_ = [
        ("opcode", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("ioprio", ctypes.c_uint16),
        ("fd", ctypes.c_int32),
        ("off", ctypes.c_uint64),
        ("addr", ctypes.c_uint64),
        ("len", ctypes.c_uint32),
        ("op_flags", ctypes.c_uint32),
        ("user_data", ctypes.c_uint64),
        ("buf_index", ctypes.c_uint16),
        ("personality", ctypes.c_uint16),
        ("splice_fd_in", ctypes.c_int32),
        ("addr3", ctypes.c_uint64),
        ("pad", ctypes.c_uint64),
    ]


class _Cqe(ctypes.Structure):
    _fields_ = [("user_data", ctypes.c_uint64), ("res", ctypes.c_int32), ("flags", ctypes.c_uint32)]


IORING_OP_FSYNC, IORING_FSYNC_DATASYNC, IORING_REGISTER_EVENTFD = 3, 1, 4


class Uring:
    """An io_uring (rings mapped with `mmap`) whose completions make an eventfd readable.
    A bench's prototype: one submitter (the loop's thread), no memory barriers."""

    def __init__(self, entries: int = 8) -> None:
        self._lib = lib = _libc()
        p = _Params()
        fd = lib.syscall(_URING_SETUP, ctypes.c_uint(entries), ctypes.byref(p))
        if fd < 0:
            raise _fail("io_uring_setup")
        self._fd = fd
        flags, prot = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0), mmap.PROT_READ
        prot |= mmap.PROT_WRITE
        self._sq = mmap.mmap(fd, p.sq_off.array + p.sq_entries * 4, flags, prot, offset=0)
        self._cq = mmap.mmap(fd, p.cq_off.cqes + p.cq_entries * 16, flags, prot, offset=0x8000000)
        self._sqes = mmap.mmap(fd, p.sq_entries * 64, flags, prot, offset=0x10000000)
        self._sq_tail = ctypes.c_uint32.from_buffer(self._sq, p.sq_off.tail)
        self._sq_mask = ctypes.c_uint32.from_buffer(self._sq, p.sq_off.mask).value
        self._sq_array = (ctypes.c_uint32 * p.sq_entries).from_buffer(self._sq, p.sq_off.array)
        self._sqe = (_Sqe * p.sq_entries).from_buffer(self._sqes)
        self._cq_head = ctypes.c_uint32.from_buffer(self._cq, p.cq_off.head)
        self._cq_tail = ctypes.c_uint32.from_buffer(self._cq, p.cq_off.tail)
        self._cq_mask = ctypes.c_uint32.from_buffer(self._cq, p.cq_off.mask).value
        self._cqes = (_Cqe * p.cq_entries).from_buffer(self._cq, p.cq_off.cqes)
        self.efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        arg = ctypes.c_int32(self.efd)
        if lib.syscall(_URING_REGISTER, fd, IORING_REGISTER_EVENTFD, ctypes.byref(arg), 1) < 0:
            raise _fail("io_uring_register")

    def submit_fdsync(self, fd: int) -> None:
        tail = self._sq_tail.value
        idx = tail & self._sq_mask
        sqe = self._sqe[idx]
        ctypes.memset(ctypes.byref(sqe), 0, ctypes.sizeof(sqe))
        sqe.opcode, sqe.fd, sqe.op_flags = IORING_OP_FSYNC, fd, IORING_FSYNC_DATASYNC
        self._sq_array[idx] = idx
        self._sq_tail.value = tail + 1  # no barrier: x86 keeps stores in order (a prototype)
        if self._lib.syscall(_URING_ENTER, self._fd, 1, 0, 0, None, ctypes.c_size_t(0)) != 1:
            raise _fail("io_uring_enter")

    def reap(self) -> list[int]:
        out, head = [], self._cq_head.value
        while head != self._cq_tail.value:
            out.append(int(self._cqes[head & self._cq_mask].res))
            head += 1
        self._cq_head.value = head
        return out

    def close(self) -> None:
        os.close(self.efd)
        del self._sq_tail, self._sq_array, self._sqe, self._cq_head, self._cq_tail, self._cqes
        for ring in (self._sq, self._cq, self._sqes):
            ring.close()
        os.close(self._fd)


class Way(Protocol):
    def queue(self) -> Awaitable[None]: ...
    def close(self) -> None: ...


class ThreadWay:
    """(a): the writer thread writes, syncs and wakes the loop (`bridge.audit.chain`'s shape)."""

    def __init__(self, fd: int, writer_ms: float) -> None:
        self._fd, self._ms = fd, writer_ms
        self._q: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None]
        self._q = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._q.get()) is not None:
            loop, fut = item
            _work(self._ms, 3)
            os.write(self._fd, LINE)
            os.fdatasync(self._fd)
            loop.call_soon_threadsafe(fut.set_result, None)

    def queue(self) -> Awaitable[None]:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._q.put((loop, fut))
        return fut  # (e) calls this after its own write

    def close(self) -> None:
        self._q.put(None)
        self._thread.join()


class KernelWay:
    """(b)/(d): the loop writes and submits the sync; the eventfd's reader settles it."""

    def __init__(self, fd: int, engine: Completions, writer_ms: float) -> None:
        self._fd, self._engine, self._ms = fd, engine, writer_ms
        self._loop = asyncio.get_running_loop()
        self._waiting: list[asyncio.Future[None]] = []
        self._loop.add_reader(engine.efd, self._ready)
        self.results: dict[int, int] = {}

    def _ready(self) -> None:
        try:
            os.eventfd_read(self._engine.efd)
        except BlockingIOError:
            return
        for res in self._engine.reap():
            self.results[res] = self.results.get(res, 0) + 1
            fut = self._waiting.pop(0)
            if res < 0:
                fut.set_exception(OSError(-res, os.strerror(-res)))
            else:
                fut.set_result(None)

    def queue(self) -> Awaitable[None]:
        _work(self._ms, 3)
        os.write(self._fd, LINE)
        fut: asyncio.Future[None] = self._loop.create_future()
        self._engine.submit_fdsync(self._fd)
        self._waiting.append(fut)
        return fut

    def close(self) -> None:
        self._loop.remove_reader(self._engine.efd)
        self._engine.close()


class SyncThreadWay(ThreadWay):
    """(e): the loop runs the writer's Python and writes the line; the thread only syncs and
    wakes the loop (no Python of the writer's left to wait for the GIL but the wake-up)."""

    def _run(self) -> None:
        while (item := self._q.get()) is not None:
            loop, fut = item
            os.fdatasync(self._fd)
            loop.call_soon_threadsafe(fut.set_result, None)

    def queue(self) -> Awaitable[None]:
        _work(self._ms, 3)
        os.write(self._fd, LINE)
        return super().queue()


class InlineWay:
    """(c): write and fdatasync on the loop, blocking it: the floor."""

    def __init__(self, fd: int, writer_ms: float) -> None:
        self._fd, self._ms = fd, writer_ms

    def queue(self) -> Awaitable[None]:
        _work(self._ms, 3)
        os.write(self._fd, LINE)
        os.fdatasync(self._fd)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def close(self) -> None:
        pass


NAMES = {
    "a": "(a) writer thread, call_soon_threadsafe",
    "b": "(b) loop write, AIO FDSYNC -> eventfd",
    "d": "(d) loop write, io_uring FSYNC -> eventfd",
    "e": "(e) loop write, thread fdatasync only",
    "c": "(c) inline write + fdatasync (floor)",
}


def _work(ms: float, slices: int = 6) -> None:
    """`ms` of Python on this thread in `slices` slices, a GIL-releasing call between them
    (as a turn's end unit, with its SQLite calls, is; and the writer's steps)."""
    for _ in range(slices if ms else 0):
        end = time.thread_time() + ms / slices / 1e3
        while time.thread_time() < end:
            sum(range(50))
        time.sleep(0)


async def _spinner(stop: asyncio.Event, ms: float) -> None:
    while not stop.is_set():
        end = time.thread_time() + ms / 1e3
        while time.thread_time() < end:
            sum(range(50))
        await asyncio.sleep(0)


def _engines() -> tuple[dict[str, Callable[[], Completions]], list[str]]:
    """The kernel ways this host allows (each tried once), and why any other is left out."""
    found: dict[str, Callable[[], Completions]] = {}
    missing = []
    for key, make in (("b", NativeAio), ("d", Uring)):
        try:
            make().close()
        except OSError as exc:
            missing.append(f"{NAMES[key]}: left out ({exc})")
        else:
            found[key] = make
    return found, missing


async def _round(
    root: Path,
    syncs: int,
    shape: tuple[float, float, float],
    engines: dict[str, Callable[[], Completions]],
) -> tuple[dict[str, tuple[float, float, float, float, float]], dict[str, int]]:
    """`syncs` round trips of each way, interleaved; `shape`: ms of loop work between
    queueing and awaiting, ms of the writer's own Python (fit, encode, head: on the writer
    thread in (a), on the loop in the others), ms a callback of a spinner on the loop
    (0: none). Each way's p50, p90, p99, CPU and loop CPU per sync; error results."""
    work, writer, busy = shape
    keys = ["a", *engines, "e", "c"]
    fds = {k: os.open(root / f"{k}.jsonl", os.O_RDWR | os.O_APPEND | os.O_CREAT) for k in keys}
    ways: dict[str, Way] = {
        "a": ThreadWay(fds["a"], writer),
        "e": SyncThreadWay(fds["e"], writer),
        "c": InlineWay(fds["c"], writer),
    }
    for k, make in engines.items():
        ways[k] = KernelWay(fds[k], make(), writer)
    stop = asyncio.Event()
    spinner = asyncio.ensure_future(_spinner(stop, busy)) if busy else None
    lat: dict[str, list[float]] = {k: [] for k in keys}
    cpu = dict.fromkeys(keys, 0.0)
    loop_cpu = dict.fromkeys(keys, 0.0)
    warm = min(50, syncs)
    for i in range(warm + syncs):
        for k in keys if i % 2 else keys[::-1]:
            await asyncio.sleep(0)
            c0, l0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
            done = ways[k].queue()
            if work:
                _work(work)
            await done
            t1 = time.perf_counter()
            if i >= warm:
                lat[k].append(t1 - t0)
                cpu[k] += time.process_time() - c0
                loop_cpu[k] += time.thread_time() - l0
    stop.set()
    if spinner is not None:
        await spinner
    results: dict[str, int] = {}
    for k, way in ways.items():
        way.close()
        if isinstance(way, KernelWay):
            results[k] = sum(n for res, n in way.results.items() if res != 0)
    sizes = {k: os.fstat(fd).st_size for k, fd in fds.items()}
    for fd in fds.values():
        os.close(fd)
    lines = (warm + syncs) * len(LINE)
    assert all(size == lines for size in sizes.values()), sizes  # every line is in its file
    out = {}
    for k in keys:
        p50, p90, p99 = (_pick(lat[k], q) for q in (0.5, 0.9, 0.99))
        out[k] = (p50, p90, p99, cpu[k] / syncs * 1e3, loop_cpu[k] / syncs * 1e3)
    return out, results


def _pick(xs: list[float], q: float) -> float:
    """The `q` quantile of `xs` (seconds), in ms."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1e3


def _print(
    title: str, rows: dict[str, tuple[float, float, float, float, float]], cpu: bool
) -> None:
    """One shape's table (`cpu`: print the CPU columns; a busy loop's hold its spinner's)."""
    print(title)
    print(f"  {'way':<44} {'p50':>7} {'p90':>7} {'p99':>7}  CPU/sync  (loop)  p50 - (a)")
    base = rows["a"][0]
    for k in ("a", "b", "d", "e", "c"):
        if k in rows:
            p50, p90, p99, c, lc = rows[k]
            delta = "" if k == "a" else f"{p50 - base:+.3f}"
            used = f"{c:8.3f} {lc:7.3f}" if cpu else f"{'-':>8} {'-':>7}"
            print(f"  {NAMES[k]:<44} {p50:7.3f} {p90:7.3f} {p99:7.2f}  {used}  {delta}")


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--syncs", type=int, default=1000, help="syncs per way and shape")
    ap.add_argument("--work", type=float, default=0.9, help="ms of loop work in a turn's end")
    ap.add_argument("--writer", type=float, default=0.2, help="ms of the writer's Python")
    ap.add_argument("--dir", type=Path, help="where the files go (default: a temp dir)")
    ap.add_argument("--quick", action="store_true", help="a few syncs (CI: it still runs)")
    args = ap.parse_args()
    syncs = 5 if args.quick else args.syncs
    engines, missing = _engines()
    for line in missing:
        print(line)
    shapes = (
        ("loop idle while it syncs", (0.0, 0.0, 0.0)),
        (
            f"a turn's end: {args.work} ms of loop work between queueing and awaiting, "
            f"{args.writer} ms of the writer's Python",
            (args.work, args.writer, 0.0),
        ),
        ("a busy loop: a task runs 0.03 ms callbacks all the time", (0.0, 0.0, 0.03)),
        ("a busy loop: a task runs 0.3 ms callbacks all the time", (0.0, 0.0, 0.3)),
    )  # fmt: skip
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"one {len(LINE)}-byte line a sync, {syncs} syncs a way, the ways interleaved; "
              f"files in {tmp}")  # fmt: skip
        for n, (title, shape) in enumerate(shapes):
            (root := Path(tmp) / str(n)).mkdir()
            rows, errors = asyncio.run(_round(root, syncs, shape, engines))
            _print(f"{title} (ms; load {_load()})", rows, cpu=not shape[2])
            for k, n in errors.items():
                if n:
                    print(f"  {NAMES[k]}: {n} completions with an error result")
    return 0


if __name__ == "__main__":
    sys.exit(main())

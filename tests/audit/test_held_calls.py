"""The chain writer's short system calls made with the GIL kept (`bridge.audit.held`):
the same effects as `os` and `fcntl` give, errors raised as `OSError`, and a lock held by
another process waited for with the GIL let go."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.audit import held


@pytest.fixture(params=["libc", "os"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test through libc (the GIL kept) and through the `os` fallback."""
    if request.param == "os":
        monkeypatch.setattr(held, "_LIB", None)
    else:
        assert held._LIB is not None  # Linux: libc's functions are there
    yield request.param


def _nb_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def test_lock_and_unlock(tmp_path: Path, way: str) -> None:
    path = tmp_path / "chain.lock"
    mine = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    other = os.open(path, os.O_RDWR)  # another open file: as another process, for flock
    try:
        held.lock(mine)
        assert not _nb_lock(other)
        held.unlock(mine)
        assert _nb_lock(other)
    finally:
        os.close(mine)
        os.close(other)


def test_a_lock_held_elsewhere_is_waited_for_the_blocking_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chain.lock"
    mine = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    other = os.open(path, os.O_RDWR)
    waited: list[int] = []
    real = fcntl.flock

    def blocking(fd: int, op: int) -> None:
        waited.append(op)
        real(other, fcntl.LOCK_UN)  # the other process lets go while we wait
        real(fd, op)

    try:
        real(other, fcntl.LOCK_EX)
        monkeypatch.setattr(held.fcntl, "flock", blocking)
        held.lock(mine)
        assert waited == [fcntl.LOCK_EX]  # the non-blocking try failed: waited, GIL let go
        assert not _nb_lock(other)
        monkeypatch.undo()
        held.unlock(mine)
        assert _nb_lock(other)
    finally:
        os.close(mine)
        os.close(other)


def test_write_all_appends_every_byte(tmp_path: Path, way: str) -> None:
    path = tmp_path / "chain.jsonl"
    path.write_bytes(b"first\n")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        held.write_all(fd, b"second\n")
        held.write_all(fd, b"x" * 300_000 + b"\n")  # more than one pipe-sized piece
    finally:
        os.close(fd)
    assert path.read_bytes() == b"first\nsecond\n" + b"x" * 300_000 + b"\n"


def test_pwrite_writes_in_place(tmp_path: Path, way: str) -> None:
    path = tmp_path / "chain.head"
    path.write_bytes(b"a" * 16)
    fd = os.open(path, os.O_RDWR)
    try:
        held.pwrite(fd, b"BBBB", 4)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"aaaaBBBB" + b"a" * 8


def test_errors_are_raised_with_their_errno(tmp_path: Path, way: str) -> None:
    path = tmp_path / "ro"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as write_error:
            held.write_all(fd, b"no")
        with pytest.raises(OSError) as pwrite_error:
            held.pwrite(fd, b"no", 0)
    finally:
        os.close(fd)
    assert write_error.value.errno == errno.EBADF
    assert pwrite_error.value.errno == errno.EBADF
    with pytest.raises(OSError) as lock_error:
        held.lock(fd)  # closed now
    assert lock_error.value.errno == errno.EBADF


class _Interrupted:
    """libc whose first two writes are interrupted by a signal; the rest are the real ones."""

    def __init__(self, lib: object) -> None:
        self.lib = lib
        self.interrupted = 0

    def __getattr__(self, name: str) -> object:
        real = getattr(self.lib, name)
        if name not in ("write", "pwrite"):
            return real

        def call(*args: object) -> int:
            if self.interrupted < 2:
                self.interrupted += 1
                ctypes.set_errno(errno.EINTR)
                return -1
            return int(real(*args))

        return call


def test_a_call_interrupted_by_a_signal_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `os.write` retries on EINTR (PEP 475): nothing lost, no error."""
    fake = _Interrupted(held._LIB)
    monkeypatch.setattr(held, "_LIB", fake)
    fd = os.open(tmp_path / "chain.jsonl", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        held.write_all(fd, b"one line\n")
        held.pwrite(fd, b"LINE", 4)
    finally:
        os.close(fd)
    assert (tmp_path / "chain.jsonl").read_bytes() == b"one LINE\n"
    assert fake.interrupted == 2

"""forge.confine.pinning: the pages a child wrote are found in its pagemap, a pinned
page is copied by the fork (the child takes no fault writing it), and a helper's
zygote holds the pins while its children hold no descriptor of them."""

from __future__ import annotations

import ctypes
import mmap
import os
import resource
from pathlib import Path

import pytest

from forge.confine.pinning import PAGE, page_ranges, pin_pages, written_pages
from forge.runner import SandboxRunner
from tests.forge.helpers import tool
from tests.waits import HANG_S, until

aio = pytest.mark.asyncio(loop_scope="module")


def _buffer(pages: int) -> tuple[mmap.mmap, int]:
    """A private anonymous buffer, every page written (as a zygote's heap), and its address."""
    buf = mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(pages):
        buf[i * PAGE] = 1
    return buf, ctypes.addressof(ctypes.c_char.from_buffer(buf))


def test_page_ranges_join_contiguous_pages() -> None:
    pages = [5 * PAGE, 1 * PAGE, 2 * PAGE, 3 * PAGE, 3 * PAGE, 9 * PAGE]
    assert page_ranges(pages) == [(PAGE, 3 * PAGE), (5 * PAGE, PAGE), (9 * PAGE, PAGE)]
    assert page_ranges([]) == []


def test_written_pages_are_the_pages_a_child_wrote() -> None:
    buf, base = _buffer(8)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(go_w)  # EOF on go_r once the parent closes its end
        buf[2 * PAGE] = 2
        buf[5 * PAGE] = 2
        os.write(ready_w, b"r")
        os.read(go_r, 1)
        os._exit(0)
    try:
        assert os.read(ready_r, 1) == b"r"
        mine = {p - base for p in written_pages(pid) if base <= p < base + 8 * PAGE}
    finally:
        os.close(go_w)
        os.waitpid(pid, 0)
        for fd in (ready_r, ready_w, go_r):
            os.close(fd)
    assert mine == {2 * PAGE, 5 * PAGE}


def _child_faults(buf: mmap.mmap, pages: int) -> int:
    """Minor faults of a forked child that writes the first `pages` pages of `buf`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        for i in range(pages):
            buf[i * PAGE] = 3
        os._exit(0)
    os.waitpid(pid, 0)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def test_a_pinned_page_is_copied_by_the_fork() -> None:
    pinned, base = _buffer(64)
    plain, _ = _buffer(64)
    try:
        ring = pin_pages(base + i * PAGE for i in range(64))
    except OSError as exc:
        pytest.skip(f"io_uring cannot pin here: {exc}")
    try:
        with_pins = _child_faults(pinned, 64)
        without = _child_faults(plain, 64)
        assert pinned[0] == 1  # the child's write stayed its own
    finally:
        os.close(ring)
    assert without - with_pins >= 48, (with_pins, without)


def _names(pid: int) -> list[str]:
    names = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            names.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return names


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@aio
async def test_the_zygote_holds_the_pins_and_its_children_do_not(workspace: Path) -> None:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        assert (await r.run(tool("return 4"), {}, workspace)).result == 4
        zygote = r.zygote_pid(workspace)
        assert zygote is not None
        if not any("io_uring" in name for name in _names(zygote)):
            pytest.skip("io_uring cannot pin here: the zygote holds no ring")
        await until(lambda: _children(zygote), "a waiting child")

        def ringless() -> bool:
            return all(not any("io_uring" in n for n in _names(c)) for c in _children(zygote))

        # a child closes every inherited descriptor while it prepares itself
        await until(ringless, "waiting children without the zygote's ring")
        assert (await r.run(tool("return 5"), {}, workspace)).result == 5
    finally:
        await r.aclose()

"""The SQLite backend's worker thread (`bridge.storage.sqlite.worker`): a start that is
cancelled (a poller stopped while it opens, a roost closed right after it was built)
leaves a thread that stops when told, and no exception in it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

from bridge.storage.sqlite.worker import Worker
from tests.waits import HANG_S


async def test_a_cancelled_start_leaves_no_exception_in_the_thread(tmp_path: Path) -> None:
    opening, go_on = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    hook = threading.excepthook

    def opener() -> sqlite3.Connection:
        opening.set()
        go_on.wait(HANG_S)
        return sqlite3.connect(tmp_path / "x.db", check_same_thread=False)

    threading.excepthook = lambda args: errors.append(args.exc_value)  # type: ignore[assignment,misc]
    try:
        worker = Worker(opener, "db-test")
        starting = asyncio.create_task(worker.start())
        await asyncio.to_thread(opening.wait, HANG_S)
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        go_on.set()
        await asyncio.wait_for(worker.stop(), HANG_S)  # the thread ends at the stop, cleanly
    finally:
        threading.excepthook = hook
    assert errors == []

"""`RecallIndex.repair` on both backends: another instance writing while this one opens the
index is no crash. Its two counts (rows, documents) are read in one statement; read apart,
a batch committed between them made the rows outnumber the documents, a false "terms a
crash left unwritten" repair removed and re-added the newest messages' terms."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bridge.recall.index import Message, RecallIndex
from tests.storage.conftest import OpenDb

WRITES = 4  # the other instance's batches, one before each of the first reads


async def test_a_batch_written_by_another_instance_meanwhile_is_no_crash(
    open_db: OpenDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, opening = await open_db(), await open_db()
    other = RecallIndex(writer, "t")
    written = 0

    async def one_batch() -> None:
        nonlocal written
        written += 1
        text = f"note {written} of the other"
        said = Message("web:a", str(written), "user", text, written, "web")
        assert await other.add([said]) == 1

    await one_batch()

    def hooked(read: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(read)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            if written <= WRITES:  # the other instance commits a batch just before this read
                await one_batch()
            return await read(*args, **kwargs)

        return wrapper

    for name in ("read", "fetch_value", "fetch_one", "fetch_all"):
        if hasattr(opening, name):
            monkeypatch.setattr(opening, name, hooked(getattr(opening, name)))
    index = RecallIndex(opening, "t")
    assert await index.repair() == 0  # nothing a crash left: no term removed nor re-added
    monkeypatch.undo()
    assert written > 1  # the other instance did write meanwhile
    rows = await index.count()
    assert await index.text.count() == rows == written

"""A message the index cannot store costs only that message, never its batch.

A lone surrogate (U+D800-U+DFFF, what a JSON `"\\ud800"` escape makes) is no
valid Unicode: SQLite refuses the text. Exchanges queued together are written
as one batch; one with such a text or speaker name is skipped with a WARNING
that does not show it, and the others of the batch are stored and found.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.recall.index import Message
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs


async def test_a_bad_name_in_a_batch_skips_only_its_message(
    tmp_path: Path, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    caplog.set_level(logging.WARNING, logger="bridge.recall.indexer")
    exchanges = [
        ("1", "tell me about the violin", "the violin is fine", "Ann"),
        ("2", "secret-ish words quince", "the quince answer", "Bad\ud800name"),
        ("3", "tell me about the fjord", "the fjord is fine", "Bob"),
    ]
    for msg_id, asked, answer, name in exchanges:  # queued together: one batch
        indexer.record_exchange(dirs, "telegram", "42", msg_id, asked, answer, 1_000.0, name)
    await indexer.settled()
    index = await indexer.index(dirs)
    stored = {r.msg_id: r.text async for r in index.iter_all()}
    # the reply of the bad exchange carries no name: it is kept too
    assert stored == {
        "1": "tell me about the violin",
        "1:reply": "the violin is fine",
        "2:reply": "the quince answer",
        "3": "tell me about the fjord",
        "3:reply": "the fjord is fine",
    }
    assert {h.row.msg_id for h in await search(index, "fjord", 5)} == {"3", "3:reply"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    skipped = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(skipped) == 1
    assert "quince" not in skipped[0].getMessage() and "Bad" not in skipped[0].getMessage()
    assert skipped[0].exc_info is None


async def test_admit_stores_the_rest_of_a_batch_with_a_bad_text(
    tmp_path: Path, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    indexer = Indexer(db)
    dirs = TenantDirs.of(tmp_path, "t")
    caplog.set_level(logging.WARNING, logger="bridge.recall.indexer")
    got = await indexer.admit(
        dirs,
        [
            Message("web:c", "1", "user", "kayak trip", 1, "web"),
            Message("web:c", "2", "user", "tram \udfff ride", 2, "web"),
            Message("web:c", "3", "assistant", "basil pesto", 3, "web"),
        ],
    )
    assert got.added == 2
    stored = {r.msg_id: r.text async for r in (await indexer.index(dirs)).iter_all()}
    assert stored == {"1": "kayak trip", "3": "basil pesto"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "tram" not in warnings[0]


async def test_a_batch_that_fails_otherwise_is_written_one_message_at_a_time(
    tmp_path: Path, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    def mask(dirs: TenantDirs, text: str) -> str:
        if "tripwire" in text:
            raise RuntimeError("a bug in the mask step")
        return text

    indexer = Indexer(db, mask)
    dirs = TenantDirs.of(tmp_path, "t")
    caplog.set_level(logging.WARNING, logger="bridge.recall.indexer")
    indexer.record_exchange(dirs, "web", "c", "1", "about the kayak", "kayak ok", 1_000.0)
    indexer.record_exchange(dirs, "web", "c", "2", "the tripwire text", "an answer", 1_001.0)
    await indexer.settled()
    stored = {r.msg_id async for r in (await indexer.index(dirs)).iter_all()}
    assert stored == {"1", "1:reply", "2:reply"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "tripwire" not in warnings[0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

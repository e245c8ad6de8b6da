"""A schema upgrade is one INFO line naming the old and the new step; nothing else is.

`roost serve` on a home an older roost made migrated it without a word (doctor had
said "step 16 of 20 (roost serve migrates)"); now the log says when it happens.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase

OLD = len(MIGRATIONS) - 3


def upgrades(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "database schema" in r.getMessage()]


async def test_an_upgrade_says_from_which_step_to_which(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    path = tmp_path / "roost.db"
    older = await SqliteDatabase.open(path)  # a home an older roost made
    await older.migrate(MIGRATIONS[:OLD])
    await older.aclose()
    assert upgrades(caplog) == []  # a new database is made, not upgraded: nothing said

    db = await open_database(path)
    await db.aclose()
    (line,) = upgrades(caplog)
    assert line.levelno == logging.INFO
    assert line.getMessage() == (
        f"upgrading the database schema from step {OLD} to step {len(MIGRATIONS)}"
    )

    caplog.clear()
    db = await open_database(path)  # a start with nothing to upgrade
    await db.aclose()
    assert upgrades(caplog) == []

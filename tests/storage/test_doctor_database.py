"""`roost doctor`'s database check through the `Database` protocol, on both backends:
the schema step against the one this roost knows, and integrity (SQLite's quick_check,
PostgreSQL's data checksums named); on SQLite the home's roost.db is opened as it is."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridge.cli.doctor import check_database, database_check, no_database
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from tests.storage.conftest import OpenDb

KNOWN = MIGRATIONS[-1].version


async def test_a_migrated_database_is_ok(db: Database, backend: str) -> None:
    found = await database_check(db)
    assert (found.status, found.name) == ("ok", "database")
    assert found.reason.endswith(f"schema step {KNOWN}")
    health = "quick_check ok" if backend == "sqlite" else "PostgreSQL, data checksums o"
    assert found.reason.startswith(health)


async def test_a_database_behind_is_a_warning(open_db: OpenDb) -> None:
    db = await open_db(migrate=False)
    await db.migrate(MIGRATIONS[:5])
    found = await database_check(db)
    assert found.status == "warn"
    assert found.reason.endswith(f"schema step 5 of {KNOWN} (roost serve migrates)")


async def test_a_database_ahead_of_this_roost_fails(db: Database, backend: str) -> None:
    if backend == "sqlite":
        await db.execute(f"PRAGMA user_version = {KNOWN + 1}")
    else:
        await db.execute(
            "INSERT INTO storage_schema (version, what, applied_ms) VALUES (?, 'later', 0)",
            (KNOWN + 1,),
        )
    found = await database_check(db)
    assert found.status == "FAIL"
    assert f"schema step {KNOWN + 1}, newer than this roost knows ({KNOWN})" in found.reason


async def test_the_homes_file_is_opened_as_it_is(backend: str, tmp_path: Path) -> None:
    """SQLite: a roost.db behind and readable by others stays so (the doctor reports, it
    neither migrates nor repairs); a missing one is a warning and is not created."""
    if backend != "sqlite":
        pytest.skip("the home's file is SQLite's")
    path = tmp_path / "roost.db"
    missing = no_database(path)
    assert missing is not None and missing.status == "warn" and not path.exists()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    path.chmod(0o644)
    found = await check_database(path)
    assert (found.status, found.reason) == (
        "warn",
        f"quick_check ok; schema step 3 of {KNOWN} (roost serve migrates)",
    )
    assert path.stat().st_mode & 0o777 == 0o644
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (3,)
    assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
    conn.close()


async def test_a_file_that_is_not_a_database_fails(backend: str, tmp_path: Path) -> None:
    if backend != "sqlite":
        pytest.skip("the home's file is SQLite's")
    path = tmp_path / "roost.db"
    path.write_bytes(b"this is not SQLite" * 64)
    found = await check_database(path)
    assert found.status == "FAIL"
    assert found.reason == "roost.db: file is not a database; restore it from a backup"


async def test_a_clobbered_header_fails_while_a_wal_holds_page_one(
    backend: str, tmp_path: Path
) -> None:
    """A daemon that runs (or was killed) leaves a WAL, and SQLite reads page 1 from it:
    the clobbered header of the file itself must still fail."""
    if backend != "sqlite":
        pytest.skip("the home's file is SQLite's")
    path = tmp_path / "roost.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("CREATE TABLE u (y)")  # page 1 again, now only in the WAL
    try:
        with path.open("r+b") as f:
            f.write(b"this is not SQLite")
        found = await check_database(path)
    finally:
        conn.close()
    assert found.status == "FAIL"
    assert found.reason == "roost.db: file is not a database; restore it from a backup"


async def test_pairings_the_configuration_ignores_are_named_on_both_backends(
    db: Database, backend: str, location: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`roost doctor`'s pairing line reads the bindings where the service keeps them: the
    home's roost.db, or `[database] url` (one connection, nothing migrated)."""
    from bridge.cli.doctor import check_pairings
    from bridge.core.config import load_settings
    from bridge.core.pairing import PairingStore

    if backend == "sqlite":
        monkeypatch.setenv("ROOST_HOME", str(Path(location).parent))
    else:
        monkeypatch.setenv("ROOST_DATABASE__URL", location)
    store = PairingStore(db)
    code = await store.issue("alice")
    assert (await store.redeem("telegram", "111", code)).outcome == "bound"
    (home.parent / "roost.toml").write_text("[tenants.bob]\n")
    (found,) = await check_pairings(load_settings(), 5.0)
    assert (found.status, found.name) == ("warn", "pairing")
    assert found.reason.startswith("1 binding to tenants ")
    assert found.reason.endswith(
        "(alice) ignored (roost access list); if that is the service's"
        " configuration and they were removed on purpose: roost access revoke alice"
    )
    (home.parent / "roost.toml").write_text("[tenants.alice]\n")
    assert await check_pairings(load_settings(), 5.0) == []

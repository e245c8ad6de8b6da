"""`bridge.storage.copy`: a home's SQLite state into another database, verified, resumable.

The source is a real SQLite roost.db with rows in every table of the schema
and a text index (`tests/storage/filler.py`); the target runs on both
backends (`backend`: SQLite and a real PostgreSQL). The rows are compared
directly as well as by the copy's own hash, so a hash that always agreed
would be caught.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.storage import copy
from bridge.storage.copy import CopyRefused, Tally, encode
from bridge.storage.leases import Leases, claim_instance
from bridge.storage.schema import MIGRATIONS
from bridge.storage.sqlite import SqliteDatabase
from tests.storage.conftest import OpenDb
from tests.storage.filler import fill

N = 12


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[Any]:
    path = tmp_path / "home.db"
    db = await SqliteDatabase.open(path)
    await db.migrate(MIGRATIONS)
    await fill(db, path, N)
    yield db
    await db.aclose()


async def rows_of(db: Any, table: str, columns: tuple[str, ...]) -> list[bytes]:
    cols = ", ".join(f'"{c}"' for c in columns)
    return sorted(encode(r) for r in await db.fetch_all(f'SELECT {cols} FROM "{table}"'))


async def run(source: Any, target: Any, **options: Any) -> list[copy.Check]:
    return await copy.copy(source, target, MIGRATIONS, source_name="/home/test", **options)


async def test_every_table_and_the_text_index_arrive_equal(source: Any, open_db: OpenDb) -> None:
    target = await open_db(migrate=False)  # empty: the copy migrates it
    checks = await run(source, target)
    tables = await source.tables()
    assert [c.name for c in checks] == [*sorted(tables), "text:recall"]
    assert all(c.ok and c.copied for c in checks), [c for c in checks if not c.ok]
    assert {c.name: c.source.rows for c in checks} == {
        **dict.fromkeys(tables, N),
        "text:recall": 60,
    }
    for table, columns in tables.items():  # the rows themselves, not only the hash
        assert await rows_of(target, table, columns) == await rows_of(source, table, columns), table
    for tenant in ("alice", "bob"):
        query = ["kaffee", "HEISS", "strasse", "fine", tenant]
        mine = await source.text_index("recall", tenant).search(query, 50)
        assert await target.text_index("recall", tenant).search(query, 50) == mine
        assert len(mine) == 30
    assert await copy.marker(target) == copy.DONE


async def test_rows_written_after_the_copy_are_numbered_past_the_copied_ids(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db(migrate=False)
    await run(source, target)
    copied = await target.fetch_value("SELECT max(id) FROM outbox")
    new = await target.fetch_value(
        "INSERT INTO outbox (tenant, channel, chat, key, text, state, created_ms, due_ms) "
        "VALUES ('alice', 'web', 'default', 'k-new', 'hi', 'queued', 1, 1) RETURNING id"
    )
    assert new > copied


class Stop(Exception):
    pass


async def test_a_copy_stopped_mid_table_leaves_it_untouched_and_a_rerun_copies_the_rest(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db(migrate=False)

    def stop_in_session_messages(line: str) -> None:
        if line.startswith("copying session_messages: 5 rows"):
            raise Stop  # after its first batch of 5, inside its transaction

    with pytest.raises(Stop):
        await run(source, target, batch=5, progress=stop_in_session_messages)
    assert await target.fetch_value("SELECT count(*) FROM session_messages") == 0  # rolled back
    assert await target.fetch_value("SELECT count(*) FROM refusal_notices") == N  # done before
    assert await copy.marker(target) == copy.COPYING

    checks = await run(source, target, batch=5)
    assert all(c.ok for c in checks)
    again = {c.name for c in checks if c.copied}
    later = {t for t in await source.tables() if t >= "session_messages"}
    assert again == later | {"text:recall"}  # the tables before it were equal: not copied
    assert await copy.marker(target) == copy.DONE


async def test_a_finished_copy_is_only_verified_again_and_a_changed_value_shows(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db(migrate=False)
    await run(source, target)
    # one value changed, the row count the same: the hash must tell
    changed = await target.execute(
        "UPDATE skill_grades SET grade = grade + 1 "
        "WHERE name = (SELECT min(name) FROM skill_grades)"
    )
    assert changed == 1
    checks = {c.name: c for c in await run(source, target)}
    bad = checks["skill_grades"]
    assert not bad.ok and not bad.copied and bad.source.rows == bad.target.rows == N
    assert all(c.ok and not c.copied for name, c in checks.items() if name != "skill_grades")
    assert await copy.marker(target) == copy.DONE
    assert [c.name for c in await copy.verify(source, target) if not c.ok] == ["skill_grades"]


async def test_after_an_online_snapshot_a_run_copies_again_what_changed(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db(migrate=False)
    await run(source, target, snapshot=True)
    assert await copy.marker(target) == copy.SNAPSHOT
    await source.execute(
        "INSERT INTO token_usage (tenant, model, day, turns) VALUES ('carol', 'm', '2026-12-02', 3)"
    )
    checks = await run(source, target)
    assert [c.name for c in checks if c.copied] == ["token_usage"]
    assert all(c.ok for c in checks)
    assert await target.fetch_value("SELECT turns FROM token_usage WHERE tenant = 'carol'") == 3
    assert await copy.marker(target) == copy.DONE


async def test_a_target_holding_data_no_copy_put_there_is_refused(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db()
    await target.execute(
        "INSERT INTO chat_settings (tenant, channel, chat, key, value) "
        "VALUES ('zed', 'web', 'default', 'model', 'big')"
    )
    with pytest.raises(CopyRefused, match=r"holds data no copy put there \(chat_settings\)"):
        await run(source, target)
    assert await target.fetch_value("SELECT count(*) FROM chat_settings") == 1
    assert await copy.marker(target) is None


async def test_a_target_at_another_schema_version_is_refused(source: Any, open_db: OpenDb) -> None:
    target = await open_db(migrate=False)
    await target.migrate(MIGRATIONS[:5])
    with pytest.raises(CopyRefused, match=r"target database is at schema version 5, the home at"):
        await run(source, target)
    assert await target.version() == 5


async def test_a_target_an_instance_serves_from_is_refused(source: Any, open_db: OpenDb) -> None:
    target = await open_db()
    await claim_instance(Leases(target), "eu-1", "process-a", 60_000)
    with pytest.raises(CopyRefused, match=r"instances serve from the target database now \(eu-1\)"):
        await run(source, target)


def test_the_hash_is_order_independent_and_counts_repeats_and_types() -> None:
    a, b = encode(("x", 1, None)), encode(("x", 2, None))
    assert Tally().add(a).add(b) == Tally().add(b).add(a)
    assert Tally().add(a).add(a) != Tally().add(a)
    assert Tally().add(a).add(a).rows == 2
    assert encode((3,)) == encode((3.0,))  # SQLite keeps an integral REAL as it came
    assert encode((3.5,)) != encode((3,))
    assert encode(("1",)) != encode((1,))
    assert encode((None,)) != encode(("",))
    assert encode(("ab", "")) != encode(("a", "b"))


async def test_refresh_copies_a_named_table_again_after_a_finished_copy(
    source: Any, open_db: OpenDb
) -> None:
    target = await open_db(migrate=False)
    await run(source, target)
    await source.execute("UPDATE sessions SET turns = turns + 5")  # roost.db served on
    await source.execute("UPDATE jobs SET runs = runs + 1")
    checks = {c.name: c for c in await run(source, target, refresh=["sessions"])}
    assert checks["sessions"].ok and checks["sessions"].copied
    assert not checks["jobs"].ok and not checks["jobs"].copied  # not named: only compared
    with pytest.raises(CopyRefused, match="names no table of the home: nope"):
        await run(source, target, refresh=["nope"])

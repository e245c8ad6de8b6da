"""Every statement method, the same on both backends (conformance)."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.storage.errors import IntegrityError, StorageError

T = (
    "CREATE TABLE kv (id {pk}, tenant TEXT NOT NULL, k TEXT NOT NULL,"
    " n BIGINT NOT NULL DEFAULT 0, x DOUBLE PRECISION, b BLOB, UNIQUE (tenant, k))"
)


async def _table(db: Any) -> None:
    ddl = T.format(pk=db.dialect.identity_pk)
    if db.dialect.name == "postgresql":
        ddl = ddl.replace("BLOB", "BYTEA")
    await db.execute(ddl)


async def test_execute_fetch_with_positional_and_named_values(db: Any) -> None:
    await _table(db)
    assert await db.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("a", "one", 1)) == 1
    assert (
        await db.execute(
            "INSERT INTO kv (tenant, k, n) VALUES (:t, :k, :n)", {"t": "a", "k": "two", "n": 2}
        )
        == 1
    )
    assert await db.fetch_all("SELECT k, n FROM kv ORDER BY n") == [("one", 1), ("two", 2)]
    assert await db.fetch_one("SELECT k FROM kv WHERE n = :n", {"n": 2}) == ("two",)
    assert await db.fetch_one("SELECT k FROM kv WHERE n = ?", (9,)) is None
    assert await db.fetch_value("SELECT count(*) FROM kv") == 2
    assert await db.fetch_value("SELECT k FROM kv WHERE n = 9") is None
    assert await db.execute("UPDATE kv SET n = n + 10 WHERE tenant = ?", ("a",)) == 2
    assert await db.execute("DELETE FROM kv WHERE k = ?", ("zzz",)) == 0


async def test_values_come_back_as_plain_python(db: Any) -> None:
    await _table(db)
    await db.execute(
        "INSERT INTO kv (tenant, k, n, x, b) VALUES (?, ?, ?, ?, ?)",
        ("a", "k", 2**40, 0.25, b"\x00\xff"),
    )
    await db.execute("INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?)", ("a", "k2", 3))
    row = await db.fetch_one("SELECT n, x, b, k FROM kv WHERE k = 'k'")
    assert row == (2**40, 0.25, b"\x00\xff", "k")
    total = await db.fetch_value("SELECT SUM(n) FROM kv")
    assert total == 2**40 + 3 and type(total) is int  # PostgreSQL's numeric, as an int
    assert type(await db.fetch_value("SELECT COALESCE(SUM(n), 0) FROM kv WHERE k = 'none'")) is int


async def test_returning_gives_new_ids_in_order(db: Any) -> None:
    await _table(db)
    first = await db.fetch_value("INSERT INTO kv (tenant, k) VALUES ('a', 'x') RETURNING id")
    second = await db.fetch_value("INSERT INTO kv (tenant, k) VALUES ('a', 'y') RETURNING id")
    assert isinstance(first, int) and second > first


async def test_upsert_and_do_nothing_are_portable(db: Any) -> None:
    await _table(db)
    upsert = (
        "INSERT INTO kv (tenant, k, n) VALUES (:t, :k, :n) ON CONFLICT (tenant, k) "
        "DO UPDATE SET n = kv.n + excluded.n"
    )
    for _ in range(3):
        await db.execute(upsert, {"t": "a", "k": "c", "n": 5})
    assert await db.fetch_value("SELECT n FROM kv WHERE k = 'c'") == 15
    ignore = "INSERT INTO kv (tenant, k, n) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
    assert await db.execute(ignore, ("a", "c", 99)) == 0
    assert await db.execute(ignore, ("a", "d", 1)) == 1
    assert await db.fetch_value("SELECT n FROM kv WHERE k = 'c'") == 15


async def test_a_constraint_is_an_integrity_error_and_bad_sql_a_storage_error(db: Any) -> None:
    await _table(db)
    await db.execute("INSERT INTO kv (tenant, k) VALUES ('a', 'k')")
    with pytest.raises(IntegrityError):
        await db.execute("INSERT INTO kv (tenant, k) VALUES ('a', 'k')")
    with pytest.raises(StorageError):
        await db.execute("SELEKT nonsense")
    with pytest.raises(StorageError):
        await db.fetch_all("SELECT * FROM no_such_table")
    assert await db.fetch_value("SELECT count(*) FROM kv") == 1  # still usable


async def test_execute_many(db: Any) -> None:
    await _table(db)
    await db.execute_many(
        "INSERT INTO kv (tenant, k, n) VALUES (:t, :k, :n)",
        [{"t": "a", "k": f"k{i}", "n": i} for i in range(50)],
    )
    await db.execute_many("UPDATE kv SET n = n * 2 WHERE k = ?", [("k1",), ("k2",)])
    assert await db.fetch_value("SELECT SUM(n) FROM kv") == sum(range(50)) + 3
    await db.execute_many("INSERT INTO kv (tenant, k) VALUES (?, ?)", [])


async def test_now_ms_is_the_database_clock(db: Any) -> None:
    import time

    before = int(time.time() * 1000)
    got = await db.now_ms()
    after = int(time.time() * 1000)
    assert before - 5_000 <= got <= after + 5_000  # the same host: clocks agree to the second


async def test_tables_list_columns_without_the_engines_own(db: Any) -> None:
    tables = await db.tables()
    assert tables["grade_judge_usage"] == ("tenant", "day", "asked", "ignored", "capped")
    assert not [name for name in tables if name.startswith("storage_")]

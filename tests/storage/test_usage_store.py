"""Token usage and budgets (`bridge.core.usage`, `bridge.core.budgets`) on both backends.

Counting is one upsert, so two connections (two instances) adding at once lose
nothing; a budget period is announced once of two racing connections; the
meter's figure of a budgeted tenant follows its own writes at once and another
instance's within `refresh_s` (at every check from 80 % on); a tenant without
a budget costs one statement a turn and no read.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bridge.core.budgets import Budget, UsageMeter
from bridge.core.usage import Tokens, UsageRow, UsageStore, utc_day
from bridge.storage.protocol import Database
from bridge.storage.units import Made
from bridge.types.audit_sink import TurnEvents
from tests.conftest import Clock
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced

DAY = "2027-01-15"  # the Clock fixture's day (08:00 UTC)
REFRESH_S = 2.0


def budgets(**by_tenant: Budget) -> dict[str, Budget]:
    return by_tenant


def meter(db: Database, clock: Clock, table: dict[str, Budget]) -> UsageMeter:
    return UsageMeter(UsageStore(db), lambda t: table.get(t, Budget()), clock, refresh_s=REFRESH_S)


async def test_usage_is_summed_per_tenant_model_day_and_month(db: Database) -> None:
    store = UsageStore(db)
    await store.record("alice", "default", DAY, Tokens(1000, 50, 800))
    await store.record("alice", "default", DAY, Tokens(10, 5, 0))
    await store.record("alice", "smart", DAY, Tokens(100, 1, 0), turns=0)  # a summary
    await store.record("alice", "default", "2027-01-02", Tokens(7, 3, 0))
    await store.record("alice", "default", "2026-12-31", Tokens(999, 1, 0))  # last month
    await store.record("bob", "default", DAY, Tokens(5, 5, 0))
    assert await store.used("alice", DAY, DAY) == 1000 + 50 + 10 + 5 + 100 + 1
    assert await store.used_now("alice", DAY) == (1166, 1176)
    assert await store.used_now("carol", DAY) == (0, 0)
    assert await store.rows("alice", "2027-01-01", "2027-01-31") == [
        UsageRow("alice", "default", 3, Tokens(1017, 58, 800)),
        UsageRow("alice", "smart", 0, Tokens(100, 1, 0)),
    ]
    everyone = await store.rows(None, DAY, DAY)
    assert [(r.tenant, r.model, r.turns) for r in everyone] == [
        ("alice", "default", 2),
        ("alice", "smart", 0),
        ("bob", "default", 1),
    ]


async def test_two_connections_adding_at_once_lose_nothing(open_db: OpenDb) -> None:
    """Two instances (two connections; two pools on PostgreSQL) each add 100 turns of one
    tenant, model and day, all at once: the row holds every one of them."""
    one, two = UsageStore(await open_db()), UsageStore(await open_db())
    adds = [
        store.record("alice", "default", DAY, Tokens(10, 2, 1))
        for _ in range(100)
        for store in (one, two)
    ]
    await asyncio.gather(*adds)
    assert await one.rows("alice", DAY, DAY) == [
        UsageRow("alice", "default", 200, Tokens(2000, 400, 200))
    ]


async def test_a_budget_period_is_announced_once_of_two_racing_connections(
    open_db: OpenDb,
) -> None:
    one, two = UsageStore(await open_db()), UsageStore(await open_db())
    for n in range(10):
        period = f"daily:2027-01-{n + 10}"
        won = await asyncio.gather(
            one.first_notice("alice", period, 1), two.first_notice("alice", period, 2)
        )
        assert sorted(won) == [False, True]
    assert not await one.first_notice("alice", "daily:2027-01-10", 3)
    assert await one.first_notice("bob", "daily:2027-01-10", 3)  # per tenant


async def test_a_budget_is_shared_by_two_instances(open_db: OpenDb, clock: Clock) -> None:
    """Instance B sees what instance A counted: within `refresh_s` while the tenant is
    under 80 % of the budget, at once (every check reads) from 80 % on."""
    table = budgets(alice=Budget(daily=1000))
    a, b = meter(await open_db(), clock, table), meter(await open_db(), clock, table)
    assert await b.reached("alice") is None  # B has read the figure: 0
    await a.record("alice", "default", Tokens(500, 0))
    assert await a.near("alice") == ""
    clock.advance(REFRESH_S)
    assert await b.near("alice") == ""  # read again: 500 (50 %)
    await a.record("alice", "default", Tokens(300, 0))
    clock.advance(REFRESH_S)
    assert "800 of 1,000" in await b.near("alice")  # read again: 80 %
    await a.record("alice", "default", Tokens(200, 0))
    found = await b.reached("alice")  # no clock step: near the limit, B reads every check
    assert found is not None and (found.which, found.used, found.limit) == ("daily", 1000, 1000)
    assert "Your daily token budget is used up: 1,000 of 1,000" in (
        await b.refusal("alice", TurnEvents()) or ""
    )
    assert await b.reached("bob") is None  # no budget: never refused


async def test_own_writes_count_at_once_without_a_read(db: Database, clock: Clock) -> None:
    """Under 80 %, the meter reads a budgeted tenant's figure once per `refresh_s` and
    adds its own writes to it; a tenant without a budget is never read."""
    m = meter(db, clock, budgets(alice=Budget(daily=10_000, monthly=100_000)))
    assert await m.reached("alice") is None
    assert m.reads == 1
    for _ in range(7):
        await m.record("alice", "default", Tokens(1000, 0))
        assert await m.reached("alice") is None
    assert m.reads == 1
    assert "7,000" not in await m.near("alice")  # 70 %: nothing to say, still no read
    await m.record("alice", "default", Tokens(1000, 0))  # 80 %: read at every check
    assert "8,000 of 10,000" in await m.near("alice")
    assert m.reads == 2
    await m.record("alice", "default", Tokens(2000, 0))
    found = await m.reached("alice")
    assert found is not None and found.used == 10_000 and m.reads == 3
    for _ in range(3):
        await m.record("bob", "default", Tokens(10**6, 0))
        assert await m.reached("bob") is None and await m.near("bob") == ""
    assert m.reads == 3


async def test_a_new_utc_day_starts_from_the_database(db: Database, clock: Clock) -> None:
    m = meter(db, clock, budgets(alice=Budget(daily=1000, monthly=1500)))
    await m.record("alice", "default", Tokens(900, 0))
    assert "900 of 1,000" in await m.near("alice")
    clock.advance(16 * 3600)  # 2027-01-16 00:00 UTC
    assert utc_day(clock()) == "2027-01-16"
    assert await m.reached("alice") is None  # today: 0; the month: 900 of 1,500
    await m.record("alice", "default", Tokens(600, 0))
    found = await m.reached("alice")
    assert found is not None and (found.which, found.used) == ("monthly", 1500)


async def test_reloaded_budgets_count_from_the_next_check(db: Database, clock: Clock) -> None:
    m = meter(db, clock, {})
    await m.record("alice", "default", Tokens(600, 0))
    assert await m.reached("alice") is None
    m.set_budgets(lambda t: Budget(daily=500))
    found = await m.reached("alice")
    assert found is not None and found.used == 600


async def test_a_write_that_fails_is_logged_and_the_turn_goes_on(
    db: Database, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    m = meter(db, clock, budgets(alice=Budget(daily=1000)))
    await db.execute("DROP TABLE token_usage")
    with caplog.at_level(logging.ERROR, logger="bridge.core.budgets"):
        await m.record("alice", "default", Tokens(5, 5))
        await m.record("bob", "default", Tokens(5, 5))
    assert [r.getMessage()[:17] for r in caplog.records] == ["usage not counted"] * 2


async def test_a_turns_usage_is_one_statement_and_no_transaction(
    backend: str, tmp_path: Path, clock: Clock
) -> None:
    """SQLite, while roost.db has two ways in: counting a turn is ONE statement (and the
    check of a tenant without a budget none); no write sends BEGIN."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        m = meter(database, clock, budgets(alice=Budget(daily=10**6)))
        statements.clear()
        for _ in range(5):
            assert await m.refusal("bob", TurnEvents()) is None
            await m.record("bob", "default", Tokens(10, 1))
        assert [s.split(" (")[0] for s in statements] == ["INSERT INTO token_usage"] * 5
        statements.clear()
        for _ in range(5):
            assert await m.refusal("alice", TurnEvents()) is None
            await m.record("alice", "default", Tokens(10, 1))
        assert len(statements) == 6  # one read of the figure, five upserts
        await m.store.first_notice("alice", "daily:2027-01-15", 1)
    finally:
        await database.aclose()
    assert not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]


async def test_a_count_inside_another_write_keeps_the_figure(db: Database, clock: Clock) -> None:
    """`counted`: the turn's count runs in the caller's unit; the kept figure moves only
    when that unit committed (a failed one counts nothing: the caller uses `record`)."""
    m = meter(db, clock, budgets(alice=Budget(daily=10_000)))
    assert await m.reached("alice") is None and m.reads == 1

    async def committed(unit: Made[int]) -> bool:
        return await db.atomic(unit) == 1

    async def failed(unit: Made[int]) -> bool:
        return False

    assert await m.counted("alice", "default", Tokens(3000, 0), committed)
    assert not await m.counted("alice", "default", Tokens(5000, 0), failed)
    assert await m.counted("bob", "default", Tokens(7, 0), committed)  # no budget
    assert await m.near("alice") == "" and m.reads == 1  # 3,000 kept, not 8,000: no read
    await m.record("alice", "default", Tokens(5000, 0))
    assert "8,000 of 10,000" in await m.near("alice") and m.reads == 2  # 80 %: read
    rows = await m.store.rows(None, DAY, DAY)
    assert [(r.tenant, r.turns, r.tokens.total) for r in rows] == [
        ("alice", 2, 8000),
        ("bob", 1, 7),
    ]

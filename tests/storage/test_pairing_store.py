"""The pairing store (`bridge.core.pairing`) on both backends: codes, redeeming (one winner
of a race between two connections), lockouts, the bounded stranger tables, bindings and
the mirror the resolver's rule reads; every write one statement."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bridge.core import pairing
from bridge.core.db import connect
from bridge.core.pairing import (
    ALPHABET,
    LOCKOUT_S,
    MAX_FAILURES,
    SEEN_EVERY_S,
    PairingStore,
    code_hash,
    watching,
)
from bridge.storage.protocol import Database
from bridge.types.messages import Inbound
from tests.conftest import Clock
from tests.storage.conftest import OpenDb
from tests.storage.traced import traced
from tests.waits import HANG_S, until

CAP = 400  # the stranger tables' bound under test, lowered from 10,000 (25x shorter floods)


def said(identity: str, channel: str = "telegram") -> Inbound:
    return Inbound(channel, identity, identity, "hi", "1")


async def count(db: Database, table: str) -> int:
    return int(await db.fetch_value(f"SELECT count(*) FROM {table}"))


@pytest.fixture
def store(db: Database, clock: Clock) -> PairingStore:
    return PairingStore(db, clock)


async def test_codes_are_unambiguous_hashed_and_single_use(
    store: PairingStore, db: Database
) -> None:
    codes = {await store.issue("bob") for _ in range(50)}
    assert len(codes) == 50
    assert all(len(c) == 8 and set(c) <= set(ALPHABET) for c in codes)
    assert not set("01OIL") & set(ALPHABET)
    stored = "\n".join(str(row) for row in await db.fetch_all("SELECT * FROM pairing_codes"))
    assert all(c not in stored for c in codes)
    code = codes.pop()
    assert code_hash(code) in stored
    assert (await store.redeem("telegram", "7", code.lower())).outcome == "bound"
    assert await store.bound_tenant("telegram", "7") == "bob"
    assert (await store.redeem("telegram", "8", code)).outcome == "wrong"
    rule = store.rule()
    assert rule(said("7")) == "bob"
    assert rule(said("7", channel="web")) is None
    assert store.rule(lambda tenant: tenant != "bob")(said("7")) is None, "not configured"


async def test_an_issued_code_that_collides_is_drawn_again(db: Database, clock: Clock) -> None:
    draws = iter("AAAAAAAAAAAAAAAABBBBBBBB")
    store = PairingStore(db, clock, rand=lambda alphabet: next(draws))
    assert await store.issue("bob") == "AAAAAAAA"
    assert await store.issue("bob") == "BBBBBBBB"


async def test_codes_expire_after_an_hour(store: PairingStore, clock: Clock) -> None:
    code = await store.issue("bob")
    clock.advance(3601)
    result = await store.redeem("telegram", "7", code)
    assert result.outcome == "wrong" and await store.bound_tenant("telegram", "7") is None


async def test_lockout_lasts_an_hour_and_blocks_even_the_right_code(
    store: PairingStore, clock: Clock
) -> None:
    code = await store.issue("bob")
    results = [await store.redeem("telegram", "7", "WRONGONE") for _ in range(5)]
    assert [r.failures_left for r in results[:4]] == [4, 3, 2, 1]
    assert results[4].outcome == "locked" and results[4].just_locked
    assert results[4].locked_until == clock.now + LOCKOUT_S
    again = await store.redeem("telegram", "7", code)
    assert again.outcome == "locked" and not again.just_locked
    assert (await store.redeem("telegram", "8", "WRONGONE")).failures_left == 4, "per identity"
    clock.advance(LOCKOUT_S - 1)
    assert (await store.redeem("telegram", "7", code)).outcome == "locked"
    clock.advance(2)
    code = await store.issue("bob")
    assert (await store.redeem("telegram", "7", code)).outcome == "bound"


async def test_after_a_lockout_the_count_starts_again(store: PairingStore, clock: Clock) -> None:
    for _ in range(MAX_FAILURES):
        await store.redeem("telegram", "7", "WRONGONE")
    clock.advance(LOCKOUT_S + 1)
    assert (await store.redeem("telegram", "7", "WRONGONE")).failures_left == MAX_FAILURES - 1


async def test_failures_older_than_the_window_are_forgotten(
    store: PairingStore, clock: Clock
) -> None:
    for _ in range(4):
        await store.redeem("telegram", "7", "WRONGONE")
    clock.advance(3700)
    assert (await store.redeem("telegram", "7", "WRONGONE")).failures_left == 4


async def test_refusal_is_loud_once_per_identity(store: PairingStore) -> None:
    assert await store.should_refuse_loudly("telegram", "9")
    assert not await store.should_refuse_loudly("telegram", "9")
    assert await store.should_refuse_loudly("telegram", "10")


async def test_refusal_notices_keep_only_the_newest(
    store: PairingStore, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pairing, "MAX_STRANGER_ROWS", CAP)
    for n in range(CAP + 800):
        assert await store.should_refuse_loudly("telegram", str(n))
    assert await count(db, "refusal_notices") == CAP
    newest = str(CAP + 799)
    assert not await store.should_refuse_loudly("telegram", newest), "the newest are remembered"
    assert await store.should_refuse_loudly("telegram", "0"), "the oldest were forgotten"


async def test_failure_counters_are_pruned_and_capped(
    store: PairingStore, db: Database, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pairing, "MAX_STRANGER_ROWS", CAP)
    for n in range(CAP + 500):
        assert (await store.redeem("telegram", str(n), "WRONGCDE")).outcome == "wrong"
    assert await count(db, "pairing_failures") <= CAP
    # a lockout ends after its hour, and then its counter goes too
    for _ in range(5):
        await store.redeem("telegram", "victim", "WRONGCDE")
    clock.advance(3601)
    await store.redeem("telegram", "newcomer", "WRONGCDE")
    assert await count(db, "pairing_failures") == 1, "expired windows are dropped"


async def test_a_running_lockout_is_never_what_makes_room(
    store: PairingStore, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attacker's pass: 10,001 fresh identities failing once each pushed a locked one's
    counter out, and its next guess was answered "wrong, 4 left" instead of "locked"."""
    monkeypatch.setattr(pairing, "MAX_STRANGER_ROWS", CAP)
    for _ in range(5):
        await store.redeem("matrix", "@victim:x", "WRONGCDE")
    for n in range(CAP + 50):
        assert (await store.redeem("matrix", f"@n{n}:x", "WRONGCDE")).outcome == "wrong"
    assert (await store.redeem("matrix", "@victim:x", "WRONGCDE")).outcome == "locked"
    assert await count(db, "pairing_failures") <= CAP + 1


async def test_the_least_recently_failed_counter_is_forgotten_first(
    store: PairingStore, db: Database, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A counter written again moves to the newest end (INSERT OR REPLACE gave it a new
    rowid before; the upsert gives it a new `seq`)."""
    monkeypatch.setattr(pairing, "MAX_STRANGER_ROWS", 3)
    for who in ("a", "b", "c"):
        await store.redeem("telegram", who, "WRONGCDE")
    await store.redeem("telegram", "a", "WRONGCDE")  # a is the newest now
    await store.redeem("telegram", "d", "WRONGCDE")  # b goes
    rows = await db.fetch_all("SELECT identity, failures FROM pairing_failures ORDER BY seq")
    assert rows == [("c", 1), ("a", 2), ("d", 1)]


async def test_pairing_clears_an_earlier_refusal_notice(store: PairingStore) -> None:
    assert await store.should_refuse_loudly("telegram", "7")
    assert (await store.redeem("telegram", "7", await store.issue("bob"))).outcome == "bound"
    assert await store.revoke("telegram", "7") == "bob"
    assert await store.revoke("telegram", "7") is None
    assert await store.should_refuse_loudly("telegram", "7"), "revoked: told again, once"
    assert not await store.should_refuse_loudly("telegram", "7")


async def test_bindings_revoke_tenant_and_stamps(store: PairingStore, clock: Clock) -> None:
    for who, tenant in (("1", "bob"), ("2", "bob"), ("3", "alice")):
        assert (await store.redeem("telegram", who, await store.issue(tenant))).outcome == "bound"
        clock.advance(1)
    assert [(b.identity, b.tenant) for b in await store.bindings()] == [
        ("1", "bob"),
        ("2", "bob"),
        ("3", "alice"),
    ]
    await store.stamp("telegram", "3", "alice")
    assert await store.last_seen() == {("telegram", "3"): clock.now}
    gone = await store.revoke_tenant("bob")
    assert [(b.identity, b.tenant) for b in gone] == [("1", "bob"), ("2", "bob")]
    assert [b.identity for b in await store.bindings()] == ["3"]
    assert store.rule()(said("1")) is None and store.rule()(said("3")) == "alice"


async def test_last_seen_is_written_at_most_once_a_minute(db: Database) -> None:
    now = [1000.0]
    store = PairingStore(db, clock=lambda: now[0])
    await store.redeem("telegram", "7", await store.issue("bob"))
    assert (await store.bindings())[0].last_seen is None
    for step in range(10):
        now[0] = 1000.0 + step * 5  # ten messages within 45 seconds
        assert await store.seen("telegram", "7") == "bob"
    assert (await store.bindings())[0].last_seen == 1000.0
    now[0] = 1000.0 + SEEN_EVERY_S
    await store.seen("telegram", "7")
    assert (await store.bindings())[0].last_seen == 1000.0 + SEEN_EVERY_S


async def test_a_binding_seen_ten_times_in_a_minute_is_written_once(
    backend: str, tmp_path: Path
) -> None:
    """SQLite's statements: the hot path reads the binding and writes last_seen rarely."""
    if backend != "sqlite":
        pytest.skip("the statements SQLite ran")
    now = [1000.0]
    database, statements = await traced(tmp_path / "roost.db")
    try:
        store = PairingStore(database, clock=lambda: now[0])
        await store.redeem("telegram", "7", await store.issue("bob"))
        statements.clear()
        for step in range(10):
            now[0] = 1000.0 + step * 5
            await store.seen("telegram", "7")
    finally:
        await database.aclose()
    writes = [s for s in statements if s.lstrip().upper().startswith("UPDATE PAIRING_BINDINGS")]
    assert len(writes) == 1


async def test_two_connections_racing_to_redeem_one_code_make_one_binding(
    open_db: OpenDb, clock: Clock
) -> None:
    """Two instances (two connections, two pools on PostgreSQL) redeem each of 20 codes
    at the same moment, for different people: exactly one wins each code."""
    one, two = PairingStore(await open_db(), clock), PairingStore(await open_db(), clock)
    for n in range(20):
        code = await one.issue("bob")
        results = await asyncio.gather(
            one.redeem("telegram", f"a{n}", code), two.redeem("telegram", f"b{n}", code)
        )
        assert sorted(r.outcome for r in results) == ["bound", "wrong"], results
    bindings = await two.bindings()
    assert len(bindings) == 20
    assert len({b.identity[1:] for b in bindings}) == 20, "one person per code"


async def test_a_redeem_waiting_on_a_locked_code_sees_it_used(
    backend: str, open_db: OpenDb, clock: Clock
) -> None:
    """PostgreSQL (read committed): a redeem that waits for another transaction holding the
    code's row re-reads it when that commits; the code used there is not redeemed again."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer: the claim never waits on another row lock")
    one, two = PairingStore(await open_db(), clock), PairingStore(await open_db(), clock)
    watcher = await open_db()
    code = await one.issue("bob")
    async with one.db.transaction():
        await one.db.execute(
            "UPDATE pairing_codes SET used_at = ?, used_by = 'telegram:1' WHERE code_hash = ?",
            (clock.now, code_hash(code)),
        )
        waiting = asyncio.create_task(two.redeem("telegram", "2", code))
        while not await watcher.fetch_value(  # the claim waits on the row lock
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()"
        ):
            assert not waiting.done(), waiting
            await asyncio.sleep(0.01)
    result = await asyncio.wait_for(waiting, HANG_S)
    assert result.outcome == "wrong"
    assert await two.bound_tenant("telegram", "2") is None


async def test_racing_wrong_codes_of_one_identity_are_all_counted(
    open_db: OpenDb, clock: Clock
) -> None:
    """Five wrong codes sent at once from two instances lock the identity: each is counted
    by one upsert, none is lost to a read-then-write."""
    one, two = PairingStore(await open_db(), clock), PairingStore(await open_db(), clock)
    stores = (one, two, one, two, one)
    results = await asyncio.gather(*(s.redeem("telegram", "7", "WRONGONE") for s in stores))
    assert sum(r.just_locked for r in results) == 1
    assert (await one.redeem("telegram", "7", await one.issue("bob"))).outcome == "locked"


async def test_the_mirror_follows_another_connections_bindings(
    open_db: OpenDb, clock: Clock
) -> None:
    """The daemon's rule reads a mirror; a pairing or a revoke through another connection
    (`roost access revoke`, another instance) reaches it through the notify."""
    daemon, other = PairingStore(await open_db(), clock), PairingStore(await open_db(), clock)
    await daemon.load()
    stop = watching(daemon)
    try:
        rule = daemon.rule()
        assert (await other.redeem("telegram", "7", await other.issue("bob"))).outcome == "bound"
        await until(lambda: rule(said("7")) == "bob", "the daemon sees the pairing")
        assert await other.revoke("telegram", "7") == "bob"
        await until(lambda: rule(said("7")) is None, "the daemon sees the revoke")
        await other.redeem("telegram", "8", await other.issue("carol"))
        await until(lambda: rule(said("8")) == "carol", "and the next pairing")
        await other.revoke_tenant("carol")
        await until(lambda: rule(said("8")) is None, "and a tenant's revoke")
    finally:
        await stop()  # type: ignore[misc]


async def test_seen_and_bound_tenant_refresh_the_mirror_at_once(
    open_db: OpenDb, clock: Clock
) -> None:
    """Without waiting for the notify: the identity's own lookup corrects the mirror."""
    daemon, other = PairingStore(await open_db(), clock), PairingStore(await open_db(), clock)
    await other.redeem("telegram", "7", await other.issue("bob"))
    assert not daemon.mirrored("telegram", "7")
    assert await daemon.seen("telegram", "7") == "bob"
    assert daemon.rule()(said("7")) == "bob"
    await other.revoke("telegram", "7")
    assert await daemon.bound_tenant("telegram", "7") is None
    assert daemon.rule()(said("7")) is None and not daemon.mirrored("telegram", "7")


async def test_no_write_holds_a_transaction_across_an_await(
    backend: str, tmp_path: Path, clock: Clock
) -> None:
    """SQLite, while roost.db has two ways in: every pairing write is one statement (the
    rule of `bridge.schedule.outbox`), so no BEGIN is ever sent."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    database, statements = await traced(tmp_path / "roost.db")
    try:
        statements.clear()
        store = PairingStore(database, clock)
        assert await store.should_refuse_loudly("telegram", "7")
        for _ in range(MAX_FAILURES):
            await store.redeem("telegram", "7", "WRONGONE")
        clock.advance(LOCKOUT_S + 1)
        assert (await store.redeem("telegram", "7", await store.issue("bob"))).outcome == "bound"
        await store.seen("telegram", "7")
        await store.stamp("telegram", "7", "bob")
        await store.revoke("telegram", "7")
        await store.revoke_tenant("bob")
    finally:
        await database.aclose()
    assert not [s for s in statements if s.lstrip().upper().startswith("BEGIN")]


async def test_the_daemons_connection_sees_a_pairing_made_through_the_database(
    backend: str, tmp_path: Path, clock: Clock
) -> None:
    """SQLite, during the move: `bridge.core.db`'s connection (export, forget, the doctor)
    reads what the store wrote, on one WAL file."""
    if backend != "sqlite":
        pytest.skip("the two-connection transition is SQLite's")
    old = connect(tmp_path / "roost.db")
    database, _ = await traced(tmp_path / "roost.db")
    try:
        store = PairingStore(database, clock)
        await store.redeem("telegram", "7", await store.issue("bob"))
        row = old.execute("SELECT tenant FROM pairing_bindings WHERE identity = '7'").fetchone()
        assert row == ("bob",)
    finally:
        await database.aclose()
        old.close()


async def test_the_stranger_prune_reads_the_seq_index(
    backend: str, tmp_path: Path, clock: Clock
) -> None:
    """SQLite's query plan: `max(seq)` and the DELETE by `seq` use the step-18 indexes, so
    a new stranger costs index lookups, not a scan of 10,000 rows."""
    if backend != "sqlite":
        pytest.skip("SQLite's query plans")
    database, _ = await traced(tmp_path / "roost.db")
    await database.aclose()
    conn = sqlite3.connect(tmp_path / "roost.db")
    try:
        for table in ("refusal_notices", "pairing_failures"):
            plan = " ".join(
                str(row[-1])
                for row in conn.execute(
                    f"EXPLAIN QUERY PLAN DELETE FROM {table} WHERE seq <= "
                    f"(SELECT max(seq) FROM {table}) - 10000"
                )
            )
            assert f"USING COVERING INDEX {table}_seq" in plan, plan
            assert f"SCAN {table}" not in plan.replace("INDEX", ""), plan
    finally:
        conn.close()

"""Strangers cannot grow the pairing tables without bound (issue 9, item 9).

Real SQLite file, injected clock.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.db import connect
from bridge.core.pairing import MAX_STRANGER_ROWS, PairingStore
from tests.conftest import Clock


def rows(store_db: object, table: str) -> int:
    return int(store_db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[attr-defined]


def test_refusal_notices_keep_only_the_newest(tmp_path: Path, clock: Clock) -> None:
    db = connect(tmp_path / "roost.db")
    try:
        store = PairingStore(db, clock)
        for n in range(MAX_STRANGER_ROWS + 2_000):
            assert store.should_refuse_loudly("telegram", str(n))
        assert rows(db, "refusal_notices") == MAX_STRANGER_ROWS
        newest = str(MAX_STRANGER_ROWS + 1_999)
        assert not store.should_refuse_loudly("telegram", newest), "the newest are remembered"
        assert store.should_refuse_loudly("telegram", "0"), "the oldest were forgotten"
    finally:
        db.close()


def test_failure_counters_are_pruned_and_capped(tmp_path: Path, clock: Clock) -> None:
    db = connect(tmp_path / "roost.db")
    try:
        store = PairingStore(db, clock)
        for n in range(MAX_STRANGER_ROWS + 500):
            assert store.redeem("telegram", str(n), "WRONGCDE").outcome == "wrong"
        assert rows(db, "pairing_failures") <= MAX_STRANGER_ROWS
        # a lockout ends after its hour, and then its counter goes too
        for _ in range(5):
            store.redeem("telegram", "victim", "WRONGCDE")
        clock.advance(3601)
        store.redeem("telegram", "newcomer", "WRONGCDE")
        assert rows(db, "pairing_failures") == 1, "expired windows are dropped"
    finally:
        db.close()


def test_pairing_clears_an_earlier_refusal_notice(tmp_path: Path, clock: Clock) -> None:
    db = connect(tmp_path / "roost.db")
    try:
        store = PairingStore(db, clock)
        assert store.should_refuse_loudly("telegram", "7")
        assert store.redeem("telegram", "7", store.issue("bob")).outcome == "bound"
        assert store.revoke("telegram", "7") == "bob"
        assert store.should_refuse_loudly("telegram", "7"), "revoked: told again, once"
        assert not store.should_refuse_loudly("telegram", "7")
    finally:
        db.close()

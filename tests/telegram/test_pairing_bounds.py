"""Strangers cannot grow the pairing tables without bound (issue 9, item 9).

Real SQLite file, injected clock.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.core import pairing
from bridge.core.db import connect
from bridge.core.pairing import PairingStore
from tests.conftest import Clock

CAP = 400  # the bound under test, lowered from 10,000 so the flood is 25x shorter


@pytest.fixture(autouse=True)
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pruning reads `MAX_STRANGER_ROWS` at each write: the same code, a smaller bound."""
    monkeypatch.setattr(pairing, "MAX_STRANGER_ROWS", CAP)


def rows(store_db: object, table: str) -> int:
    return int(store_db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # type: ignore[attr-defined]


def test_refusal_notices_keep_only_the_newest(tmp_path: Path, clock: Clock) -> None:
    db = connect(tmp_path / "roost.db")
    try:
        store = PairingStore(db, clock)
        for n in range(CAP + 800):
            assert store.should_refuse_loudly("telegram", str(n))
        assert rows(db, "refusal_notices") == CAP
        newest = str(CAP + 799)
        assert not store.should_refuse_loudly("telegram", newest), "the newest are remembered"
        assert store.should_refuse_loudly("telegram", "0"), "the oldest were forgotten"
    finally:
        db.close()


def test_failure_counters_are_pruned_and_capped(tmp_path: Path, clock: Clock) -> None:
    db = connect(tmp_path / "roost.db")
    try:
        store = PairingStore(db, clock)
        for n in range(CAP + 500):
            assert store.redeem("telegram", str(n), "WRONGCDE").outcome == "wrong"
        assert rows(db, "pairing_failures") <= CAP
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

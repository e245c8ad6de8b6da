"""Counted nouns: "1 tenant", "2 tenants", never "1 tenants"."""

from __future__ import annotations

from bridge.cli.doctor import check_config
from bridge.core.config import Settings, load_settings
from bridge.core.words import count


def test_count_picks_the_form() -> None:
    assert [count(n, "call") for n in (0, 1, 2)] == ["0 calls", "1 call", "2 calls"]
    assert count(1_250, "record") == "1,250 records"
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"


def test_the_doctor_counts_one_tenant_as_one(settings: Settings) -> None:
    one = load_settings(tenants={"alice": {"telegram_ids": [1]}})
    assert check_config(one).reason.endswith("; 1 tenant")
    assert check_config(settings).reason.endswith("; 0 tenants")

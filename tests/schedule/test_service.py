"""The schedule service: stored recurrences read back through the parser, the zone default."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bridge.core.config import ConfigError, load_settings
from bridge.schedule.jobs import JobLimits
from bridge.schedule.service import ScheduleService, host_zone, next_run_ms
from tests.schedule.database import database_of

BERLIN = ZoneInfo("Europe/Berlin")


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=BERLIN).timestamp() * 1000)  # type: ignore[misc]


def test_a_stored_daily_spec_gives_the_next_local_slot() -> None:
    after = ms(2026, 12, 1, 9, 0)
    assert next_run_ms("daily 8:00", "Europe/Berlin", after) == ms(2026, 12, 2, 8, 0)
    assert next_run_ms("daily 8:00", "Europe/Berlin", ms(2026, 12, 1, 7, 0)) == ms(2026, 12, 1, 8)


def test_a_one_shot_has_no_next_slot() -> None:
    assert next_run_ms("", "Europe/Berlin", ms(2026, 12, 1, 9, 0)) is None


def test_a_spec_that_no_longer_parses_is_an_error_not_a_silent_stop() -> None:
    with pytest.raises(ValueError, match="no longer parses"):
        next_run_ms("whenever you like", "Europe/Berlin", ms(2026, 12, 1, 9, 0))


def test_the_host_zone_is_an_iana_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    assert host_zone() == "America/New_York"
    monkeypatch.setenv("TZ", "Not/AZone")
    assert ZoneInfo(host_zone())  # falls back to the system zone or UTC


async def test_the_service_wakes_every_subscriber(tmp_path: Path) -> None:
    async with database_of(tmp_path / "roost.db") as database:
        service = ScheduleService(database, JobLimits(), "Europe/Berlin")
    woken: list[str] = []
    service.subscribe(lambda: woken.append("a"))
    service.subscribe(lambda: woken.append("b"))
    service.changed()
    assert woken == ["a", "b"] and service.default_tz == "Europe/Berlin"


def test_an_unknown_configured_zone_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Europe/Berlni"):
        load_settings(home=tmp_path, schedule={"timezone": "Europe/Berlni"})

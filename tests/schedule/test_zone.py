"""The person's zone: profile `timezone`, else `[schedule] timezone`, else the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.schedule.zone import person_zone, tenant_zone
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock, ScriptedBackend
from tests.schedule.sched_helpers import say


def test_profile_wins_then_the_default() -> None:
    assert person_zone(["- name: Ada", "- timezone: Asia/Tokyo"], "Europe/Berlin") == "Asia/Tokyo"
    assert person_zone(["- Timezone: America/New_York"], "UTC") == "America/New_York"
    assert person_zone(["- name: Ada"], "Europe/Berlin") == "Europe/Berlin"
    for bad in ("Mars/Olympus", "../../etc/passwd", "Europe/Berlin\x00", ""):
        assert person_zone([f"- timezone: {bad}"], "Europe/Berlin") == "Europe/Berlin"


def test_tenant_zone_reads_user_md(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "ada").ensure()
    assert tenant_zone(dirs, "UTC") == "UTC"
    dirs.user_md.write_text("# Profile\n- timezone: Australia/Sydney\n")
    assert tenant_zone(dirs, "UTC") == "Australia/Sydney"


async def test_the_order_through_a_real_roost(
    home: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/Chicago")  # the host
    for configured, expected in ((None, "America/Chicago"), ("Asia/Kolkata", "Asia/Kolkata")):
        settings = load_settings(schedule={"timezone": configured})
        roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
        try:
            await say(roost, "/profile rm timezone")
            assert (await say(roost, "/jobs x")).startswith("No jobs")
            await say(roost, "/every daily 8:00 hello")
            assert f"(times in {expected})" in await say(roost, "/jobs")
            await say(roost, "/profile set timezone Pacific/Auckland")
            assert "(times in Pacific/Auckland)" in await say(roost, "/jobs")
            for job in await roost.schedule.jobs.list_jobs("local"):
                await roost.schedule.jobs.remove("local", job.id)
        finally:
            await roost.aclose()


async def test_a_bad_zone_in_profile_set_is_refused_with_a_hint(home: Path, clock: Clock) -> None:
    roost = await build(
        load_settings(), backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock
    )
    try:
        reply = await say(roost, "/profile set timezone Europe/Berlni")
        assert reply.startswith(
            "'Europe/Berlni' is not a time zone I know. Did you mean Europe/Berlin?"
        )
        user_md = roost.tenant_dirs("local").user_md
        assert not user_md.exists() or "timezone" not in user_md.read_text()
        assert (await say(roost, "/profile set timezone  Europe/Berlin ")).startswith(
            "Profile: timezone set"
        )
        assert "- timezone: Europe/Berlin" in roost.tenant_dirs("local").user_md.read_text()
    finally:
        await roost.aclose()

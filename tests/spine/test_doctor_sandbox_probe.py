"""`roost doctor`'s sandbox probe (a child process: most of the command's CPU) runs beside
the checks listed before it, its line still in its place; a check that fails on the way
leaves no probe behind. The probe is a stand-in here: the order is what is asserted."""

from __future__ import annotations

import asyncio

import pytest

from bridge.cli import doctor
from bridge.cli.doctor_net import Check
from bridge.core.config import Settings
from tests.waits import HANG_S


async def test_the_probe_runs_while_the_checks_before_it_run(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    probing = asyncio.Event()

    async def probe() -> Check:
        probing.set()
        return Check("ok", "sandbox", "probed")

    async def pairings(_settings: Settings, _timeout_s: float) -> list[Check]:
        # an earlier check that ends only once the probe has begun
        await asyncio.wait_for(probing.wait(), HANG_S)
        return [Check("ok", "pairing", "none")]

    monkeypatch.setattr(doctor, "check_sandbox", probe)
    monkeypatch.setattr(doctor, "check_pairings", pairings)
    found = await doctor.checks(settings, 5.0)
    names = [check.name for check in found]
    assert names.index("pairing") < names.index("sandbox") < names.index("disk")
    assert found[names.index("sandbox")].reason == "probed"


async def test_a_check_that_fails_first_stops_the_probe(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    probing, stopped = asyncio.Event(), asyncio.Event()

    async def probe() -> Check:
        probing.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise
        raise AssertionError("unreachable")

    async def pairings(_settings: Settings, _timeout_s: float) -> list[Check]:
        await asyncio.wait_for(probing.wait(), HANG_S)
        raise RuntimeError("pairings broke")

    monkeypatch.setattr(doctor, "check_sandbox", probe)
    monkeypatch.setattr(doctor, "check_pairings", pairings)
    with pytest.raises(RuntimeError, match="pairings broke"):
        await doctor.checks(settings, 5.0)
    assert stopped.is_set()

"""`roost doctor`'s sandbox line comes from a sandbox helper the doctor starts itself (as the
daemon does, no `python -m forge capabilities` process in between), closed after: a helper
that does not start is a FAIL, a layer the machine lacks a warning in that line only.
The real probe's line: tests/spine/test_doctor.py."""

from __future__ import annotations

import logging

import pytest

from bridge.cli import doctor
from forge.runner import SandboxRunner


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[SandboxRunner]:
    """The runners the probe closed."""
    done: list[SandboxRunner] = []

    async def aclose(self: SandboxRunner) -> None:
        done.append(self)

    monkeypatch.setattr(SandboxRunner, "aclose", aclose)
    return done


async def test_a_helper_that_does_not_start_is_a_fail(
    monkeypatch: pytest.MonkeyPatch, closed: list[SandboxRunner]
) -> None:
    async def start(self: SandboxRunner) -> None:
        raise RuntimeError("sandbox helper exited at start")

    monkeypatch.setattr(SandboxRunner, "start", start)
    check = await doctor.check_sandbox()
    assert (check.status, check.name) == ("FAIL", "sandbox")
    assert "sandbox helper exited at start" in check.reason
    assert len(closed) == 1


async def test_a_missing_layer_is_said_in_the_line_not_logged(
    monkeypatch: pytest.MonkeyPatch,
    closed: list[SandboxRunner],
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def start(self: SandboxRunner) -> None:
        self._caps = {
            "landlock": {"available": False, "detail": "not in this kernel"},
            "seccomp": {"available": True, "detail": "arch x86_64"},
        }
        self._warn()  # what the runner logs once its first helper said hello

    monkeypatch.setattr(SandboxRunner, "start", start)
    caplog.set_level(logging.WARNING)
    check = await doctor.check_sandbox()
    assert check.status == "warn"
    assert "unavailable: landlock" in check.reason
    assert "seccomp arch x86_64" in check.reason
    assert not [r for r in caplog.records if r.name == "forge.runner"]
    assert len(closed) == 1
    # the hush is the probe's only: the runner's logger speaks again afterwards
    logging.getLogger("forge.runner").warning("after the probe")
    assert [r.getMessage() for r in caplog.records] == ["after the probe"]

"""A restart-only setting is compared with what the daemon started with, not the last read.

Changing `web.port` in the file warns that it needs a restart; putting the file
back as it was must not warn again (the port in force never changed). A
setting that is still changed keeps being named at every reload.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from bridge.app.notify import Notifier
from bridge.app.reload import Reloader
from bridge.core.config import Settings, load_settings

WARNING = "changed but applied only after a restart: web.port"


def test_putting_the_file_back_does_not_warn(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    ports = iter([9000, settings.web.port, 9001])
    versions: Iterator[int] = iter(range(100))  # each reload reads a changed file
    reloader = Reloader(
        settings,
        lambda: load_settings(web={"port": next(ports)}),
        Notifier(None),
        fingerprint=lambda: str(next(versions)),
    )
    warned: list[bool] = []
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            caplog.clear()
            assert reloader.reload() is True
            warned.append(any(WARNING in r.getMessage() for r in caplog.records))
    assert warned == [True, False, True]  # changed, back as started, changed again

"""Start-up: a `roost` process skips pydantic's plugin look-up (bridge/cli/main.py).

The look-up scans the entry points of every installed distribution at the first
model pydantic builds. `roost` sets `PYDANTIC_DISABLE_PLUGINS=__all__` for its own
process unless the environment already holds a value; asserted: the pinned
pydantic honours the variable (no scan at all), `roost` sets it, keeps an
operator's value, and an in-process `main([...])` (the tests') leaves the
environment alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic.plugin import _loader

from bridge.cli import main as cli_main
from tests.fresh import env_without, python_c

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "import atexit, os, runpy, sys\n"
    "atexit.register(lambda: print('seen=' + repr(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))))\n"
    "sys.argv = ['roost', '--help']\n"
    "runpy.run_module('bridge.cli.main', run_name='__main__')\n"
)


def roost_sees(value: str | None) -> str:
    """What `roost --help`'s process holds in PYDANTIC_DISABLE_PLUGINS, started with `value`."""
    env = env_without("PYDANTIC_DISABLE_PLUGINS")
    if value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = value
    done = python_c(PROBE, env=env | {"PYTHONPATH": str(REPO)})
    return done.stdout.strip().splitlines()[-1]


def test_roost_sets_it_for_its_own_process() -> None:
    assert roost_sees(None) == "seen='__all__'"


@pytest.mark.parametrize("value", ["", "logfire-plugin", "__all__"])
def test_an_operators_value_is_kept(value: str) -> None:
    assert roost_sees(value) == f"seen={value!r}"


def test_the_pinned_pydantic_honours_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_scan(**_: object) -> object:
        raise AssertionError("pydantic scanned the entry points")

    monkeypatch.setattr(_loader, "entry_points", no_scan)
    monkeypatch.setattr(_loader, "_plugins", None)
    name, value = cli_main.NO_PYDANTIC_PLUGINS
    monkeypatch.setenv(name, value)
    assert list(_loader.get_plugins()) == []
    monkeypatch.delenv(name)
    with pytest.raises(AssertionError, match="scanned"):
        _loader.get_plugins()


def test_main_with_arguments_leaves_the_environment_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    umask = os.umask(0o022)  # main() sets roost's own: this worker's is put back
    try:
        with pytest.raises(SystemExit):
            cli_main.main(["--help"])
    finally:
        os.umask(umask)
    capsys.readouterr()
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ

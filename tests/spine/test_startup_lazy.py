"""Start-up: what a path must not import, asserted on `sys.modules` (never on time).

Each case runs one `roost` command (or a bare import) in a subprocess that
reports, as it exits, the top-level packages in `sys.modules`. On a SQLite home
no path imports asyncpg (`bridge.app.database.postgres_engine` loads the
PostgreSQL backend only for a configured URL); `roost doctor` of a home without
a model or Telegram imports no HTTP client; importing the entry point imports
none of the optional SDKs; `roost pair` none of them either. The figures are in
bench/startup.py; tests/spine/test_terminal_startup.py covers the commands that
run a turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spine.import_probe import imported_by
from tests.spine.test_terminal_startup import environment

SDKS = ("telegram", "mcp", "mcp_types", "PIL", "pypdf", "asyncpg", "mautrix")


def top_level(args: list[str], env: dict[str, str]) -> tuple[int, str, set[str]]:
    """(exit status, stdout, top-level packages imported) of `roost ARGS`."""
    code, out, modules = imported_by(args, env)
    return code, out, {m.split(".")[0] for m in modules}


def offline(home: Path) -> dict[str, str]:
    """A home with no model and no Telegram configured."""
    env = environment(home)
    for key in ("ROOST_LLM__BASE_URL", "ROOST_LLM__API_KEY", "ROOST_LLM__MODEL"):
        env.pop(key)
    return env


def test_importing_the_entry_point_imports_no_sdk(home: Path) -> None:
    code, _, loaded = top_level(["--import-only"], environment(home))
    assert code == 0
    assert loaded & {*SDKS, "aiohttp", "pydantic"} == set()


@pytest.mark.parametrize(
    ("args", "says"),
    [(["send", "/help"], "/help all"), (["pair", "local"], "")],
    ids=["send", "pair"],
)
def test_a_command_on_sqlite_imports_no_sdk(args: list[str], says: str, home: Path) -> None:
    code, out, modules = imported_by(args, environment(home))
    assert code == 0 and says in out
    assert {m.split(".")[0] for m in modules} & set(SDKS) == set()
    assert "bridge.storage.copy" not in modules  # `roost db migrate`'s, and the doctor's


def test_doctor_without_a_server_to_ask_imports_no_http_client(home: Path) -> None:
    code, out, loaded = top_level(["doctor"], offline(home))
    assert "backend" in out and "not configured (no telegram.token)" in out, out
    assert code in (0, 1)  # a FAIL elsewhere (e.g. the sandbox on this machine) is not ours
    assert loaded & {*SDKS, "aiohttp"} == set()


def test_doctor_with_a_model_still_asks_it(home: Path) -> None:
    """The lazy client is still there when a check needs it: nobody listens on the
    configured port, and the doctor says so."""
    code, out, loaded = top_level(["doctor"], environment(home))
    assert code == 1 and "backend" in out and "unreachable" in out, out
    assert "aiohttp" in loaded and "asyncpg" not in loaded


def test_a_retry_after_date_is_still_read_in_a_fresh_process() -> None:
    from tests.fresh import python_c

    probe = (
        "import sys\n"
        "from bridge.llm.http_retry import retry_after_seconds\n"
        "print('email' in sys.modules, retry_after_seconds("
        "'Sun, 06 Dec 2026 10:00:42 GMT', now=1796551200.0))\n"
    )
    assert python_c(probe).stdout.split() == ["False", "42.0"]

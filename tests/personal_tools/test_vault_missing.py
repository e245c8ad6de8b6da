"""N14: a tool declaring a secret the vault does not hold yet.

The consent names the declared secrets missing from the vault and the operator's
command that stores one (README: `roost vault set TENANT NAME`); a call that reads
one fails saying it is declared but not stored, with the same command — not
"declare it in SECRETS", which it already does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bridge.app.build import Roost
from bridge.core.config import Settings
from bridge.types.messages import Final
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.personal_tools.test_vault_names import VALUE, vault_set, written

SOURCE = (
    'SECRETS = ["api_key", "missing_key"]\n\n\n'
    "def run() -> str:\n"
    '    """Use two keys."""\n'
    '    a = secret("api_key")\n'
    '    b = secret("missing_key")\n'
    "    return str(a) + str(b)\n"
)


@asynccontextmanager
async def offered(
    settings: Settings, clock: Clock
) -> AsyncIterator[tuple[Roost, ScriptedBackend, Final]]:
    """Alice's roost after its model wrote the tool `sec` and she asked to save it: the
    roost, its backend and the consent offer."""
    async with written(settings, clock, "sec", "two keys", SOURCE) as (roost, backend):
        yield roost, backend, await roost.core.handle(web_msg("/tool save sec", 2))


async def test_consent_and_error_name_the_secret_missing_from_the_vault(
    settings: Settings, clock: Clock, home: Path
) -> None:
    done = vault_set(home, "alice", "api_key", VALUE)
    assert done.returncode == 0, done.stderr
    async with offered(settings, clock) as (roost, backend, offer):
        note = [line for line in offer.text.splitlines() if "Not in your vault yet" in line]
        assert len(note) == 1, offer.text
        assert "missing_key" in note[0] and "api_key" not in note[0], note
        assert "`roost vault set alice missing_key`" in note[0], note
        # the note comes before the line saying how to keep it
        assert offer.text.splitlines()[-1].startswith("To keep it, send:"), offer.text
        (button,) = offer.actions
        saved = await roost.core.handle(web_msg(button.command, 3))
        assert saved.text.startswith("Saved me.sec"), saved.text
        assert "Not in your vault yet: missing_key." in saved.text, saved.text
        backend.steps += [[("me__sec", "{}")], "done"]
        await roost.core.handle(web_msg("use it", 4))
        error = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
        assert "'missing_key' is declared in SECRETS but not stored in the vault yet" in error
        assert "`roost vault set alice missing_key`" in error, error
        assert "declare it in SECRETS and store" not in error, error
        assert VALUE not in error


async def test_consent_is_quiet_when_every_declared_secret_is_stored(
    settings: Settings, clock: Clock, home: Path
) -> None:
    for name in ("api_key", "MISSING_KEY"):  # names compare case-insensitively
        assert vault_set(home, "alice", name, VALUE).returncode == 0
    async with offered(settings, clock) as (_, _, offer):
        assert "vault yet" not in offer.text, offer.text

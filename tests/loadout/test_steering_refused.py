"""An `@include` steering may not read is named in the block, with the reason.

The operator who writes `@/etc/passwd` sees in `roost prompt` why nothing of
it arrived; a tenant's tree says the same whether or not the file outside its
root exists (the note tells nothing about other tenants).
"""

from __future__ import annotations

import io
from pathlib import Path

from bridge.cli.loadout import print_prompt
from bridge.core.config import Settings
from bridge.core.filecache import FileCache
from bridge.loadout.steering import resolve, tenant_confinement
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock

OUTSIDE = "[steering: @/etc/passwd not included — outside the files steering may include]"


async def test_roost_prompt_says_why_an_include_was_skipped(
    settings: Settings, clock: Clock
) -> None:
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "STEERING.md").write_text(
        "Be kind. @/etc/passwd @web-token @tenants/bob/global/USER.md @notes.md\n"
    )
    (settings.home / "web-token").write_text("TOKENVALUE")
    (settings.home / "notes.md").write_text("Operator notes.")
    out = io.StringIO()
    await print_prompt(settings, "local", "web", "c1", "m1", False, out, clock.now)
    shown = out.getvalue()
    assert OUTSIDE in shown
    assert "[steering: @web-token not included — a private file (database, token)]" in shown
    assert "@tenants/bob/global/USER.md not included — tenants', audit and vault" in shown
    assert "Operator notes." in shown  # an allowed include still arrives
    assert "root:" not in shown and "TOKENVALUE" not in shown


def test_a_tenants_note_does_not_tell_whether_the_outside_file_exists(home: Path) -> None:
    alice, bob = TenantDirs.of(home, "alice").ensure(), TenantDirs.of(home, "bob").ensure()
    carol = TenantDirs.of(home, "carol")
    alice.steering.write_text(f"@{bob.user_md} @{carol.user_md}")
    bob.user_md.write_text("BOB")  # bob's exists, carol's does not
    text = resolve(alice.steering, tenant_confinement(alice), 45_000, FileCache().read)[0]
    notes = [line for line in text.splitlines() if line.startswith("[steering:")]
    assert [n.split(" not included — ")[1].rstrip("]") for n in notes] == [
        "outside the files steering may include"
    ] * 2
    assert "BOB" not in text

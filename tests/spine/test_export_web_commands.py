"""The web page's kept slash commands are part of a person's export, and only theirs.

The page keeps each command a person sent and its reply beside their files
(`tenants/<tid>/web/commands/`, outside `global/`, so no saved tool reads it).
That is data about the person: `roost export` holds it under `web-commands/`,
masked with the vault as it is at export time (a value vaulted after the
command was kept reads `[vault:NAME]`), and another tenant's commands are not in it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from bridge.app.database import open_database
from bridge.app.export import write_export
from bridge.channels.web.commandlog import CommandLog, Sent
from bridge.core.sessions import SessionKey
from bridge.loadout.vault import set_value
from bridge.types.tenant_dirs import TenantDirs

TOKEN = "tok_" + "Z9y8" * 8


async def test_the_export_holds_the_persons_web_commands_masked(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    log = CommandLog(lambda tenant: TenantDirs.of(home, tenant).web_commands)
    alice, bob = SessionKey("alice", "web", "c1"), SessionKey("bob", "web", "c1")
    await log.add(alice, Sent(1, 1.0, f"/remember key: {TOKEN}", "Remembered."), [1])
    await log.add(bob, Sent(2, 2.0, "/memory", "bob's memories"), [2])
    set_value(TenantDirs.of(home, "alice"), "api", TOKEN)  # vaulted after it was kept
    db = await open_database(home / "roost.db")
    try:
        done = await write_export(home, db, "alice", out, "2026-12-06")
    finally:
        await db.aclose()
    with zipfile.ZipFile(out) as zf:
        names = [n for n in zf.namelist() if n.startswith("web-commands/")]
        assert len(names) == 1
        text = zf.read(names[0]).decode()
        assert "/remember key: [vault:api]" in text and "Remembered." in text
        assert TOKEN not in text and "bob's memories" not in text
        assert "web-commands/" in zf.read("README.txt").decode()
    assert done.files >= 1

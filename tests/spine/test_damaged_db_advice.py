"""The way out a damaged roost.db is given works when followed as written.

`roost serve` on a truncated roost.db used to say "move roost.db (and -wal, -shm)
aside, then restore a backup (roost restore)"; done so, `roost restore` refused (the
home still held tenants/ and audit/). Now it says to move the home aside and
restore the backup into it; done so, the restore succeeds and roost starts.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.spine.test_doctor import lines, roost
from tests.spine.test_reload import write_config

OFFLINE = {"ROOST_LLM__PROVIDER": "offline", "ROOST_WEB__PORT": "0"}


async def test_the_advice_for_a_damaged_database_restores_it(home: Path, tmp_path: Path) -> None:
    write_config("[tenants.alice]\n")
    code, out = await roost("pair", "alice", **OFFLINE)  # some state: database, chain, files
    assert code == 0, out
    backup = tmp_path / "backup"
    code, out = await roost("backup", str(backup), **OFFLINE)
    assert code == 0, out
    os.truncate(home / "roost.db", 10_000)  # damaged

    code, out = await roost("serve", **OFFLINE)
    assert code == 1, out
    (said,) = [line for line in out.splitlines() if "damaged" in line]
    assert f"Stop roost, then either move the home {home} aside and restore a backup into it " in (
        said
    )

    os.rename(home, tmp_path / "home.damaged")  # as it says
    code, out = await roost("restore", str(backup), **OFFLINE)
    assert code == 0, out
    code, out = await roost("doctor", "--timeout", "1", **OFFLINE)
    assert lines(out)["database"][0] == "ok", out

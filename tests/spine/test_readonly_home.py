"""A read-only home (a disk remounted read-only, a read-only bind mount): one line each.

`roost doctor` crashed there with a 40-line traceback (SQLite needs to write beside
roost.db: its chmod and its WAL index); `roost backup` said the database "cannot be
used ... if it is damaged, restore a backup" of a database that is fine. Now doctor
FAILs the database check in one line saying why, and backup says the home is
read-only, exit 2, nothing left in DEST.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spine.test_doctor import lines, roost
from tests.spine.test_reload import write_config

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None, reason="a bind mount: needs root"
)
OFFLINE = {"ROOST_LLM__PROVIDER": "offline", "ROOST_WEB__PORT": "0"}


@pytest.fixture
def read_only(home: Path, tmp_path: Path) -> Iterator[Path]:
    """`home` (with a database, an audit chain and a tenant's files) seen read-only."""
    seen = tmp_path / "ro"
    seen.mkdir()
    subprocess.run(["mount", "--bind", str(home), str(seen)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(seen)], check=True)
        yield seen
    finally:
        subprocess.run(["umount", str(seen)], check=True)


@pytest.fixture
async def made(home: Path) -> Path:
    write_config("[tenants.alice]\n")
    code, out = await roost("pair", "alice", **OFFLINE)  # a database, chain, tenant folder
    assert code == 0, out
    return home


async def test_doctor_and_backup_say_the_home_is_read_only(
    made: Path, read_only: Path, tmp_path: Path
) -> None:
    code, out = await roost("doctor", "--timeout", "1", **OFFLINE, ROOST_HOME=str(read_only))
    assert "Traceback" not in out, out
    assert code == 1, out
    status, reason = lines(out)["database"]
    assert (status, reason) == (
        "FAIL",
        "roost.db: cannot open it (Read-only file system); roost needs its home writable",
    )

    dest = tmp_path / "copy"
    code, out = await roost("backup", str(dest), **OFFLINE, ROOST_HOME=str(read_only))
    assert code == 2, out
    (line,) = out.splitlines()
    assert line.startswith(f"roost backup: the home {read_only} is on a read-only file system")
    assert "damaged" not in line
    assert not dest.exists()

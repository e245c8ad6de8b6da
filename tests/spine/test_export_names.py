"""The export names every file of a tenant's tree, whatever bytes its name holds.

A tool could make a file whose name is not UTF-8 (`open("\\udcff\\n.txt", "w")`, before
the path gate refused such names): `roost export` and /export then failed inside
`zipfile` with a UnicodeEncodeError, so the person could export nothing. Now the
name is written with U+FFFD for the bytes that are not UTF-8.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from bridge.app.database import open_database
from bridge.app.export import write_export


def _tree(home: Path) -> None:
    workspace = home / "tenants/alice/global/workspace"
    workspace.mkdir(parents=True)
    with open(os.fsencode(workspace) + b"/\xff\n.txt", "wb") as f:
        f.write(b"made by a tool")
    (workspace / "plain.txt").write_text("plain")


async def test_a_name_that_is_not_utf8_is_exported_with_a_replacement(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "alice.zip"
    _tree(home)
    db = await open_database(home / "roost.db")
    try:
        done = await write_export(home, db, "alice", out, "2026-12-06")
    finally:
        await db.aclose()
    assert done.files == 2
    with zipfile.ZipFile(out) as zf:
        assert zf.read("files/workspace/\ufffd\n.txt") == b"made by a tool"
        assert zf.read("files/workspace/plain.txt") == b"plain"

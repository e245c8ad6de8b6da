"""What `roost export` and `roost forget` say to a newcomer's slip (s33 N8, N9).

`--out` naming a folder once answered "DIR exists; give another --out"; now it says
it is a folder and gives a file name in it. `forget --tenant typo` once advised adding
`[tenants.typo]` to the config first (creating what the person meant to delete); now
it says nothing was deleted and lists the known tenants. Through the real CLI.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.spine.test_config import run_roost


def test_export_to_a_folder_says_to_give_a_file_name_in_it(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "exports-here"
    folder.mkdir()
    proc = run_roost(home, "export", "--tenant", "local", "--out", f"{folder}/")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert re.fullmatch(
        rf"roost export: {re.escape(str(folder))} is a folder; give a file name in it, "
        rf"e.g\. --out {re.escape(str(folder))}/roost-export-local-\d{{8}}-\d{{6}}\.zip\n",
        proc.stderr,
    ), proc.stderr
    assert list(folder.iterdir()) == []


def test_export_over_an_existing_file_is_still_refused(home: Path, tmp_path: Path) -> None:
    there = tmp_path / "taken.zip"
    there.write_bytes(b"keep me")
    proc = run_roost(home, "export", "--tenant", "local", "--out", str(there))
    assert proc.returncode == 2
    assert proc.stderr == f"roost export: {there} exists; give another --out\n"
    assert there.read_bytes() == b"keep me"


def test_forget_of_an_unknown_tenant_does_not_advise_creating_it(home: Path) -> None:
    proc = run_roost(home, "forget", "--tenant", "typo", "--yes")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == (
        "roost forget: there is no tenant 'typo' in the configuration nor with files in the "
        "home (known: local). Nothing was deleted: check the name against the known ones.\n"
    )
    assert "[tenants." not in proc.stderr

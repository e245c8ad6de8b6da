"""`roost doctor` on a home made with `mkdir` (0755): every start tightens the home to 0700
by itself, so doctor warns with the fix instead of failing (s33 N4); a loose file inside,
which no start fixes, and a home of another user, which roost cannot chmod, still FAIL."""

from __future__ import annotations

import os
from pathlib import Path

from tests.spine.test_doctor import lines, roost


def make_dir(home: Path) -> None:
    """`mkdir HOME` under umask 022."""
    home.mkdir()
    home.chmod(0o755)


def open_up(home: Path) -> None:
    """A 0755 home with a group-readable database in it."""
    home.chmod(0o755)
    (home / "roost.db").chmod(0o644)


async def test_a_home_made_with_mkdir_is_a_warning_with_the_fix(home: Path) -> None:
    make_dir(home)
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="offline")
    assert lines(out)["home"] == (
        "warn",
        f"the home 0755 is open to group/others: roost tightens it to 0700 at its next "
        f"start, or run `chmod 700 {home}` now",
    ), out
    assert code == 0, out


async def test_a_loose_file_beside_a_loose_home_still_fails(home: Path) -> None:
    code, out = await roost("pair", "local", ROOST_LLM__PROVIDER="offline")
    assert code == 0, out
    open_up(home)
    code, out = await roost("doctor", ROOST_LLM__PROVIDER="offline")
    assert code == 1, out
    assert lines(out)["home"] == (
        "FAIL",
        "open to group/others: the home 0755, roost.db 0644 (want dirs 0700, files 0600)",
    )


def test_a_loose_home_of_another_user_fails(tmp_path: Path) -> None:
    from bridge.cli.doctor import loose_home  # (here: its absence fails this test alone)

    other = os.geteuid() + 1
    check = loose_home(tmp_path, 0o755, other)
    assert check.status == "FAIL"
    assert f"belongs to uid {other}" in check.reason and "cannot tighten it" in check.reason

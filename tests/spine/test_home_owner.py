"""A command that writes into a home refuses to run as another user than its owner.

On a systemd install the home (/var/lib/roost) belongs to the `roost` user; an
operator typing `sudo roost pair alice` left root-owned files in it, and the
service could then not read them and stayed down (exit 78, not restarted).
Now such a command exits 78 with one line naming the owner and the command to
run instead (`sudo -u OWNER env ROOST_HOME=... roost ...`), and writes nothing; the commands that
only read the home (`doctor`, `audit`, `backup`) still run.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from bridge.cli.main import owner_problem
from tests.spine.test_doctor import roost
from tests.spine.test_reload import write_config

NOBODY = 65534


def test_another_users_home_is_refused_naming_its_owner(tmp_path: Path) -> None:
    me = os.geteuid()
    owner = pwd.getpwuid(me).pw_name
    said = owner_problem(tmp_path, me + 1, ["pair", "alice"])
    assert said is not None
    assert f"{tmp_path} belongs to the user {owner}, not to " in said
    # with the home (and the config, when set) spelled out: sudo drops both (atk39)
    assert f"`sudo -u {owner} env ROOST_HOME={tmp_path} " in said
    assert said.endswith(" roost pair alice`")
    assert owner_problem(tmp_path, me, ["pair", "alice"]) is None  # its owner
    assert owner_problem(tmp_path / "not-yet", me + 1, ["pair", "alice"]) is None  # made now


def give(home: Path, uid: int) -> None:
    for path in [home, *home.rglob("*")]:
        os.chown(path, uid, uid, follow_symlinks=False)


def files(home: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(home)), p.stat().st_uid) for p in home.rglob("*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="root plays the operator: needs root")
async def test_root_cannot_write_into_the_service_users_home(home: Path, tmp_path: Path) -> None:
    write_config("[tenants.alice]\n")
    offline = {"ROOST_LLM__PROVIDER": "offline", "ROOST_WEB__PORT": "0"}
    code, out = await roost("pair", "alice", **offline)  # the home made by its owner (here)
    assert code == 0, out
    give(home, NOBODY)  # to the service user
    owner = pwd.getpwuid(NOBODY).pw_name
    before = files(home)

    for argv in (("pair", "alice"), ("access", "revoke", "alice"), ("export", "--tenant", "alice")):
        code, out = await roost(*argv, **offline)
        assert code == 78, out
        (line,) = out.splitlines()
        assert line.startswith(f"roost: {home} belongs to the user {owner}, not to root"), line
        assert f"`sudo -u {owner} env ROOST_HOME={home} " in line
        assert line.endswith(f" roost {' '.join(argv)}`"), line
    assert files(home) == before  # nothing written, nobody's files still nobody's

    code, out = await roost("doctor", "--timeout", "1", **offline)
    assert "config" in out and "Traceback" not in out, out
    code, out = await roost("audit", "verify", **offline)
    assert code == 0, out
    code, out = await roost("backup", str(tmp_path / "copy"), **offline)
    assert code == 0, out
    assert {uid for _, uid in files(home)} == {NOBODY}

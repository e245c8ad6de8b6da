"""Root runs the read-only operator commands on the service's home as its owner.

`sudo roost access list` (or `jobs`, `usage`, ...) on a home of the `roost` user
was refused like a command that writes (exit 78). Those commands only look, yet may
create files: SQLite's `-wal`/`-shm` (SQLite itself gives those to the database's
owner when root opens it), a tenant's folders (`prompt --tenant` made them root's).
Now root becomes the home's owner first and they run, leaving every file in the home
the owner's; an installation the owner cannot read (so the command could not go on
as that user) is refused with one line naming it.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.cli.as_owner import unreadable
from tests.schedule.test_terminal_reminders import offline_env
from tests.spine.test_home_owner import NOBODY, files, give
from tests.spine.test_reload import write_config
from tests.waits import HANG_S

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root plays the operator: needs root")
REPO = Path(__file__).resolve().parents[2]
INTERPRETER = Path(os.path.realpath(sys.executable))
READS = (
    ("access", "list"),
    ("jobs",),
    ("usage",),
    ("tools", "list", "--tenant", "bob"),
    ("vault", "list", "bob"),
    ("style", "status"),
    ("style", "list-live"),
    ("prompt", "--tenant", "bob"),  # bob has no folders yet: they are made now
)


def readable_by(uid: int, paths: list[Path]) -> bool:
    """Whether `uid` can read every one of `paths` (a forked child looks as that user)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os._exit(0 if unreadable(paths) is None else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def python_of(uid: int) -> tuple[list[str], dict[str, str]] | None:
    """A way to run roost's code that `uid` can read: this interpreter, or the system's
    of the same version with this checkout and its libraries on PYTHONPATH; None."""
    libraries = sysconfig.get_paths()["purelib"]
    if readable_by(uid, [INTERPRETER, *map(Path, sys.path[1:])]):
        return [sys.executable], {}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin")
    if system is None or not readable_by(uid, [Path(system), REPO, Path(libraries)]):
        return None
    return [system], {"PYTHONPATH": f"{REPO}{os.pathsep}{libraries}"}


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the service user can reach (pytest's tmp_path is root's alone, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="roost-owner-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path)


async def roost(python: list[str], *argv: str, **env: str) -> tuple[int, str, str]:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        *python,
        "-m",
        "bridge.cli.main",
        *argv,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_root_reads_the_service_users_home_as_its_owner(home: Path, shared: Path) -> None:
    found = python_of(NOBODY)
    if found is None:
        pytest.skip("no Python here that the user nobody can read")
    python, extra = found
    write_config("[tenants.alice]\n\n[tenants.bob]\n")
    served = shared / "home"
    env = {**offline_env(served), **extra}
    code, _, err = await roost(python, "pair", "alice", **env)  # the home made by root
    assert code == 0, err
    give(served, NOBODY)  # to the service user
    before = files(served)

    for argv in READS:
        code, out, err = await roost(python, *argv, **env)
        assert code == 0, (argv, out, err)
        assert "belongs to the user" not in err and "Traceback" not in err, err
    after = files(served)
    assert {uid for _, uid in after} == {NOBODY}, after
    assert "tenants/bob/global" in dict(after) and "tenants/bob/global" not in dict(before)

    code, _, err = await roost(python, "access", "revoke", "alice", **env)  # a write: refused
    assert code == 78 and "`sudo -u nobody env ROOST_HOME=" in err, err
    assert " roost access revoke alice`" in err, err


async def test_a_roost_the_owner_cannot_read_is_named_and_nothing_runs(
    home: Path, shared: Path
) -> None:
    if readable_by(NOBODY, [INTERPRETER, *map(Path, sys.path[1:])]):
        pytest.skip("this Python is readable by the user nobody")
    write_config("[tenants.alice]\n")
    served = shared / "home"
    env = offline_env(served)
    code, _, err = await roost([sys.executable], "pair", "alice", **env)
    assert code == 0, err
    give(served, NOBODY)
    before = files(served)
    code, out, err = await roost([sys.executable], "access", "list", **env)
    assert (code, out) == (78, ""), err
    (line,) = err.splitlines()
    assert line.startswith(f"roost: {served} belongs to the user nobody: this command runs "), line
    assert "who cannot read /" in line and "/opt/roost/.venv/bin/roost" in line
    assert files(served) == before


async def test_a_root_only_file_is_named_with_the_user_the_command_runs_as(
    home: Path, shared: Path, tmp_path: Path
) -> None:
    """After root became the home's owner, a file only root may read (named on the
    command line, or by the configuration) is refused with a line naming it and that
    user, not "run roost as the user that owns HOME" (which it already is; ops2 s39)."""
    found = python_of(NOBODY)
    if found is None:
        pytest.skip("no Python here that the user nobody can read")
    python, extra = found
    personas = tmp_path / "personas"  # pytest's tmp_path: root's alone
    personas.mkdir()
    queries = tmp_path / "q.txt"
    queries.write_text("hello\n")
    write_config("")
    served = shared / "home"
    env = {**offline_env(served), **extra}
    code, _, err = await roost(python, "pair", "local", **env)
    assert code == 0, err
    give(served, NOBODY)
    why = f"(this command runs as nobody, the owner of {served}, who may not read it: put it"
    code, out, err = await roost(
        python, "recall", "--tenant", "local", "--batch", str(queries), **env
    )
    assert (code, out) == (2, ""), err
    assert (
        err
        == f"recall: cannot read {queries}: Permission denied {why} where that user can read it)\n"
    )
    write_config(f'[loadout]\npersonas_dir = "{personas}"\n')
    code, out, err = await roost(python, "prompt", **env)
    assert (code, out) == (78, ""), err
    assert (
        err
        == f"roost: cannot use {personas} (Permission denied) {why} where that user can read it)\n"
    )

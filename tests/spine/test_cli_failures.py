"""`roost` commands meet a damaged database, an unusable home, a full disk, a typo:
one line on stderr and a documented exit status, never a traceback.

The real `roost` runs as a subprocess where the fault can be made for real (a
roost.db that is not a database, a home under a regular file: ENOTDIR). Where
it cannot (these tests run as root, for whom a mode-000 home is readable; a
full disk), `bridge.cli.main.main` runs in this process with the command's
work patched to raise what the kernel would (EACCES, ENOSPC).
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from bridge.cli import main as cli
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]


def run(args: list[str], home: Path, stdin: str = "") -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(ROOST_HOME=str(home), ROOST_CONFIG=os.environ["ROOST_CONFIG"])
    proc = subprocess.run(
        [*ROOST, *args], env=env, input=stdin, capture_output=True, text=True, timeout=HANG_S
    )
    return proc.returncode, proc.stdout, proc.stderr


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def damaged(home: Path) -> Path:
    home.mkdir(mode=0o700)
    (home / "roost.db").write_text("x\n")
    return home


DAMAGED_COMMANDS = [
    ["jobs"],
    ["usage"],
    ["access", "list"],
    ["export", "--tenant", "local"],
    ["recall", "--tenant", "local", "anything"],
    ["send", "--offline", "hi"],
    ["pair", "local"],
]


@pytest.mark.parametrize("argv", DAMAGED_COMMANDS, ids=lambda a: " ".join(a))
def test_a_damaged_database_is_one_line(damaged: Path, argv: list[str]) -> None:
    code, _, err = run(argv, damaged)
    line = one_line(err)
    assert code == 1, err
    assert str(damaged / "roost.db") in line and "roost doctor" in line and "backup" in line


def test_import_into_a_damaged_database_is_one_line(damaged: Path, tmp_path: Path) -> None:
    file = tmp_path / "h.jsonl"
    file.write_text('{"conversation": "c", "id": "1", "role": "user", "text": "hi"}\n')
    code, _, err = run(["import", "--tenant", "local", str(file)], damaged)
    assert code == 1 and "roost doctor" in one_line(err)


def test_a_failed_backup_leaves_no_partial_copy(damaged: Path, tmp_path: Path) -> None:
    dest = tmp_path / "new" / "backup"
    for _ in range(2):  # the second run is refused for nothing it left behind
        code, _, err = run(["backup", str(dest)], damaged)
        assert code == 1 and "roost doctor" in one_line(err)
        assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(["backup", str(empty)], damaged)
    assert code == 1 and "roost doctor" in one_line(err)
    assert empty.is_dir() and not any(empty.iterdir())  # the operator's folder stays, empty


HOME_COMMANDS = [
    ["jobs"],
    ["usage"],
    ["access", "list"],
    ["recall", "--tenant", "local", "x"],
    ["export", "--tenant", "local"],
    ["tools", "list", "--tenant", "local"],
    ["mcp", "--tenant", "local", "--token"],
]


@pytest.mark.parametrize("argv", HOME_COMMANDS, ids=lambda a: " ".join(a))
def test_a_home_that_cannot_be_used_is_exit_78(home: Path, argv: list[str]) -> None:
    """A home below a regular file (ENOTDIR): what a root test can make of an unusable home."""
    home.parent.mkdir(parents=True, exist_ok=True)
    blocker = home.parent / "a-file"
    blocker.write_text("")
    code, _, err = run(argv, blocker / "home")
    assert code == 78, err
    assert "home: cannot use" in one_line(err)


def test_a_backup_of_a_home_that_cannot_be_used_is_exit_78(home: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, _, err = run(["backup", str(tmp_path / "dest")], blocker / "home")
    assert code == 78 and "home: cannot use" in one_line(err)
    assert not (tmp_path / "dest").exists()


@pytest.mark.parametrize("verb", ["verify", "tail"])
def test_audit_of_a_home_that_cannot_be_read_is_exit_2(home: Path, verb: str) -> None:
    home.parent.mkdir(parents=True, exist_ok=True)
    blocker = home.parent / "a-file"
    blocker.write_text("")
    code, _, err = run(["audit", verb], blocker / "home")
    assert code == 2 and "cannot read" in one_line(err)


def in_process(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    monkeypatch.setattr(os, "umask", lambda mask: 0o022)  # main sets 0077 for the process
    code = cli.main(argv)
    return code, one_line(capsys.readouterr().err)


def raising(exc: BaseException) -> Callable[..., NoReturn]:
    def fail(*args: Any, **kwargs: Any) -> NoReturn:
        raise exc

    return fail


def test_a_home_this_user_may_not_read_is_exit_78(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(mode=0o700)
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(home))
    real = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        if Path(path) == home:
            raise denied
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    code, line = in_process(["jobs"], capsys, monkeypatch)
    assert code == 78 and f"home: cannot use {home} (Permission denied)" in line


def test_a_file_this_user_may_not_touch_is_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(mode=0o700)
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(home / "roost.db"))
    monkeypatch.setattr("bridge.cli.usage.run_usage", raising(denied))
    code, line = in_process(["usage"], capsys, monkeypatch)
    assert code == 78 and f"cannot use {home / 'roost.db'} (Permission denied)" in line


def test_audit_verify_of_an_unreadable_chain_folder_is_exit_2(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(mode=0o700)
    denied = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(home / "audit"))
    monkeypatch.setattr("bridge.cli.audit.chain_paths", raising(denied))
    code, line = in_process(["audit", "verify"], capsys, monkeypatch)
    assert code == 2 and line == f"audit: cannot read {home / 'audit'}: Permission denied"


def full(path: Path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def test_export_on_a_full_disk(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(mode=0o700)
    out = tmp_path / "a.zip"
    monkeypatch.setattr("bridge.cli.export.write_export", raising(full(out)))
    code, line = in_process(["export", "--tenant", "local", "--out", str(out)], capsys, monkeypatch)
    assert code == 1 and line.startswith(f"roost: disk full: cannot write {out} (")


def test_backup_on_a_full_disk_removes_its_copy(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home.mkdir(mode=0o700)
    dest = tmp_path / "dest"

    def half(src: Path, to: Path) -> NoReturn:
        to.mkdir()
        (to / "roost.db").write_text("half")
        raise full(to / "roost.db")

    monkeypatch.setattr("bridge.cli.backup.backup", half)
    code, line = in_process(["backup", str(dest)], capsys, monkeypatch)
    assert code == 1 and "disk full" in line
    assert not dest.exists()


def test_vault_set_on_a_full_disk(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("bridge.loadout.vault.set_value", raising(full(home / "vault")))
    monkeypatch.setattr(sys, "stdin", io.StringIO("value\n"))
    code, line = in_process(["vault", "set", "local", "TOKEN"], capsys, monkeypatch)
    assert code == 1 and "disk full" in line


def test_a_full_database_is_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bridge.storage.errors import StorageError

    home.mkdir(mode=0o700)
    monkeypatch.setattr(
        "bridge.cli.schedule.run_jobs", raising(StorageError("database or disk is full"))
    )
    code, line = in_process(["jobs"], capsys, monkeypatch)
    assert code == 1 and line.startswith("roost: disk full: database or disk is full")


def test_export_into_a_missing_folder(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "nowhere" / "dir" / "a.zip"
    code, _, err = run(["export", "--tenant", "local", "--out", str(out)], home)
    assert code == 2
    assert f"the folder {out.parent} does not exist" in one_line(err)


def test_ctrl_d_at_the_vault_prompt_sets_nothing(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse
    import getpass

    from bridge.cli.loadout import vault_command

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(getpass, "getpass", raising(EOFError()))
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(vault_command="set", tenant="local", name="TOKEN")
    assert vault_command(settings, args, Terminal(), out, err) == 1
    assert "nothing set" in one_line(err.getvalue()) and out.getvalue() == ""


@pytest.mark.parametrize("batch", ["missing", "folder"])
def test_recall_batch_that_cannot_be_read(home: Path, tmp_path: Path, batch: str) -> None:
    path = tmp_path / batch
    if batch == "folder":
        path.mkdir()
    code, _, err = run(["recall", "--tenant", "local", "--batch", str(path)], home)
    assert code == 2 and one_line(err).startswith(f"recall: cannot read {path}: ")


@pytest.mark.parametrize(
    "argv",
    [
        ["prompt", "--tenant", "ghost"],
        ["usage", "--tenant", "ghost"],
        ["tools", "list", "--tenant", "ghost"],
    ],
    ids=lambda a: a[0],
)
def test_a_tenant_typo_is_refused(home: Path, argv: list[str]) -> None:
    code, _, err = run(argv, home)
    assert code == 2 and "there is no tenant 'ghost'" in one_line(err)
    assert not (home / "tenants" / "ghost").exists()


def test_a_known_tenant_still_passes(home: Path) -> None:
    code, out, err = run(["tools", "list", "--tenant", "local"], home)
    assert code == 0, err
    assert "local: no personal tools" in out


def test_nits(home: Path) -> None:
    code, out, err = run(["audit", "tail", "-n", "-5"], home)
    assert code == 2 and "negative" in err and "Traceback" not in err
    code, _, err = run(["send", "--key", "k1", "hi"], home)
    assert code == 2 and "--key goes with --to" in one_line(err)
    code, out, _ = run(["import", "--help"], home)
    assert code == 0 and "default: jsonl" in out
    code, out, _ = run(["--help"], home)
    assert code == 0 and "without a command runs `roost serve`" in " ".join(out.split())


def test_import_on_a_full_disk_is_not_an_unreadable_file(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "h.jsonl"
    file.write_text("{}\n")

    async def imported(*args: Any) -> NoReturn:
        raise full(home / "roost.db-wal")

    monkeypatch.setattr("bridge.cli.importer._imported", imported)
    code, line = in_process(["import", "--tenant", "local", str(file)], capsys, monkeypatch)
    assert code == 1 and line.startswith(f"roost: disk full: cannot write {home / 'roost.db-wal'}")


def test_a_task_groups_one_failure_is_said_as_itself(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bridge.storage.errors import StorageError

    home.mkdir(mode=0o700)
    group = ExceptionGroup("tasks", [ExceptionGroup("inner", [StorageError("disk I/O error")])])
    monkeypatch.setattr("bridge.cli.schedule.run_jobs", raising(group))
    code, line = in_process(["jobs"], capsys, monkeypatch)
    assert code == 1 and "roost.db cannot be used (disk I/O error)" in line


PRESS_CTRL_C_WHILE_STARTING = """
import sys
import bridge.core.config as config

def pressed(*args, **kwargs):
    raise KeyboardInterrupt  # Ctrl-C while the command's modules and settings load

config.load_settings = pressed
sys.argv = ["roost", *sys.argv[1:]]
from bridge.cli.main import main
sys.exit(main())
"""


@pytest.mark.parametrize("argv", [["send", "/help"], ["chat"], ["doctor"]])
def test_ctrl_c_while_a_command_starts_is_quiet(home: Path, argv: list[str]) -> None:
    """Ctrl-C in the first half second of `roost chat` or `roost send` printed a 10-20
    line traceback ending in KeyboardInterrupt (newcomer37 F9): exit 130, as a shell
    reports Ctrl-C, and nothing on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(ROOST_HOME=str(home), ROOST_CONFIG=os.environ["ROOST_CONFIG"])
    done = subprocess.run(
        [sys.executable, "-c", PRESS_CTRL_C_WHILE_STARTING, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert (done.returncode, done.stderr) == (130, "")


@pytest.mark.parametrize("opening", ["[", "\ufeff  \n["])
def test_a_chatgpt_export_read_as_jsonl_is_refused_naming_the_format(
    home: Path, tmp_path: Path, opening: str
) -> None:
    """s46: a ChatGPT conversations.json imported without --format was "imported": one
    skipped line, nothing read, exit 0. One JSON array is not JSONL: exit 2, the format
    to give named, nothing imported (no audit record, no tenant folders)."""
    export = tmp_path / "conversations.json"
    export.write_text(opening + '{"title": "t", "mapping": {}}]\n', encoding="utf-8")
    code, out, err = run(["import", "--tenant", "local", str(export)], home)
    assert (code, out) == (2, ""), err
    assert "Give --format chatgpt or --format claude. Nothing was imported" in one_line(err)
    assert not (home / "audit").exists() and not (home / "tenants").exists()
    code, out, err = run(["import", "--tenant", "local", "--format", "chatgpt", str(export)], home)
    assert code == 0 and out.startswith("imported conversations.json into tenant local:"), err

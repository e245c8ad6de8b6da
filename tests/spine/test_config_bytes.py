"""A configuration the operator can get wrong outside TOML: its bytes, its path, blank values.

Each case runs the real `roost` (doctor, send) as a subprocess and asserts what the
operator reads: a file that is not UTF-8 (a Latin-1 `é`, random bytes) or starts
with a byte-order mark, and a `ROOST_CONFIG` naming a directory, are one line and
exit 78, never a traceback; an empty `ROOST_HOME=` is unset (the default home),
as an empty `ROOST_CONFIG=` is, never the current directory; a `[web] token`
shorter than 16 characters is refused naming the key, as a tenant's `web_token` is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import HANG_S


def roost(
    *argv: str, cwd: Path | None = None, env: dict[str, str] | None = None, **more: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_LLM__")}
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", *argv],
        env={**base, "ROOST_LLM__PROVIDER": "offline", **(env or {}), **more},
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"\xff\xfe", "not UTF-8 text (byte 0xff at line 1, column 1); save it as UTF-8"),
        (
            b'[web]\nhost = "caf\xe9"\n',  # saved as Latin-1
            "not UTF-8 text (byte 0xe9 at line 2, column 12); save it as UTF-8",
        ),
        (
            b"\xef\xbb\xbf[web]\nport = 8788\n",  # a UTF-8 byte-order mark (Notepad's)
            "it starts with a byte-order mark (U+FEFF); save it as UTF-8 without one",
        ),
    ],
    ids=["binary", "latin-1", "bom"],
)
@pytest.mark.parametrize("argv", [("doctor",), ("send", "hi")])
def test_a_file_that_is_not_utf8_is_one_line(
    home: Path, data: bytes, says: str, argv: tuple[str, ...]
) -> None:
    path = Path(os.environ["ROOST_CONFIG"])
    path.write_bytes(data)
    proc = roost(*argv)
    assert proc.returncode == 78, proc.stderr
    assert proc.stderr.splitlines() == [f"roost: invalid configuration: cannot read {path}: {says}"]
    assert proc.stdout == ""  # no check line: the configuration stops doctor first


def test_roost_config_naming_a_directory_says_so(home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "etc-roost"
    folder.mkdir()
    proc = roost("doctor", ROOST_CONFIG=str(folder))
    assert proc.returncode == 78
    assert proc.stderr.splitlines() == [
        f"roost: invalid configuration: ROOST_CONFIG={folder} is a directory, not a file"
    ]


def test_an_empty_roost_home_is_the_default_home(home: Path, tmp_path: Path) -> None:
    """`ROOST_HOME=` (a unit's `Environment=ROOST_HOME=` left blank) is unset: the home is
    `$XDG_DATA_HOME/roost`, never the directory roost happens to run in."""
    where = tmp_path / "cwd"
    where.mkdir(mode=0o755)
    data = tmp_path / "xdg-data"
    blank = {"ROOST_CONFIG": "", "XDG_DATA_HOME": str(data), "HOME": str(tmp_path / "user")}
    proc = roost("send", "/help", cwd=where, env=blank, ROOST_HOME="")
    assert proc.returncode == 0, proc.stderr
    assert list(where.iterdir()) == []  # no roost.db, audit/, tenants/ here
    assert where.stat().st_mode & 0o777 == 0o755  # and not chmodded 0700
    assert (data / "roost" / "roost.db").is_file()
    proc = roost("doctor", cwd=where, env=blank, ROOST_HOME=" ")
    assert f"ok    home      {data / 'roost'}: 0700" in proc.stdout, proc.stdout


@pytest.mark.parametrize("where", ["env", "file"])
def test_a_short_web_token_is_refused_naming_the_key(home: Path, where: str) -> None:
    short = "hunter2-hunter2"  # 15 characters: a tenant's web_token needs 16 too
    env = {"ROOST_WEB__TOKEN": short} if where == "env" else {}
    if where == "file":
        Path(os.environ["ROOST_CONFIG"]).write_text(f'[web]\ntoken = "{short}"\n')
    proc = roost("doctor", env=env)
    assert proc.returncode == 78
    assert "web.token: use at least 16 characters" in proc.stderr
    assert "ROOST_WEB__TOKEN" in proc.stderr and short not in proc.stderr
    proc = roost("doctor", ROOST_WEB__TOKEN=short + "x")  # 16: accepted
    assert proc.returncode in (0, 1) and "ok    config" in proc.stdout, proc.stderr

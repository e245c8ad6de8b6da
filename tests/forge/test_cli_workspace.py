"""`python -m forge run`'s workspace: the caller's folder, never a system folder or home.

The helper runs in `/`, so a relative `--workspace` once named a folder under
`/` (`--workspace etc` gave the tool /etc), and `--workspace /` gave it the
whole machine. The command line resolves the path against the caller's
current folder and refuses `/`, every folder right under it, and the home
folder or one that holds it; a missing tool file or a bad `--timeout` is one
line, not a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from forge.__main__ import main, workspace_refusal
from tests.forge.helpers import tool

ROOT = Path(__file__).resolve().parents[2]


def test_a_relative_workspace_is_the_callers_folder(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "mine.txt").write_text("mine")
    lister = tmp_path / "ls.py"
    lister.write_text(tool("return sorted(os.listdir('.'))", imports="import os"))
    writer = tmp_path / "w.py"
    writer.write_text(tool("open('made.txt', 'w').write('x')\nreturn 1"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}

    def run(source: Path) -> dict[str, object]:
        out = subprocess.run(
            [sys.executable, "-m", "forge", "run", str(source), "--workspace", "etc"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(ROOT)},
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, out
        doc: dict[str, object] = json.loads(out.stdout)
        return doc

    assert run(lister)["result"] == ["mine.txt"]  # not /etc's files
    assert run(writer)["ok"] is True
    assert (tmp_path / "etc" / "made.txt").read_text() == "x"


@pytest.mark.parametrize("folder", ["/", "/etc", "/tmp", "/usr"])
def test_system_folders_are_refused(folder: str) -> None:
    refusal = workspace_refusal(Path(folder), home=Path("/nonexistent/home"))
    assert refusal is not None and "system folder" in refusal


def test_the_home_folder_and_its_parents_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "people" / "ann"
    (home / "tools").mkdir(parents=True)
    for folder in (home, tmp_path / "people", tmp_path):
        refusal = workspace_refusal(folder, home=home)
        assert refusal is not None and "home folder" in refusal
    assert workspace_refusal(home / "tools", home=home) is None
    assert "not a directory" in str(workspace_refusal(home / "missing", home=home))


def test_the_command_refuses_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "t.py"
    source.write_text(tool("return 1"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(source), "--workspace", "."]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and "home folder" in doc["error"]["message"]
    assert main(["run", str(source), "--workspace", "/"]) == 2
    assert "system folder" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_a_missing_tool_or_a_bad_timeout_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(tmp_path / "nope.py"), "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m forge: cannot read") and "nope.py" in err
    assert "Traceback" not in err
    for bad in ("0", "-1", "100000", "soon"):
        with pytest.raises(SystemExit) as exit_:
            main(["run", "t.py", "--workspace", str(tmp_path), "--timeout", bad])
        assert exit_.value.code == 2
        assert "--timeout" in capsys.readouterr().err

"""A tenant whose tree is too deep or too long for `os.walk`: every command still works.

The attacker's pass (issue 26's session 29): a saved tool, run seven times, built a
tree 2,800 levels deep by renames, and another nested 250-character names past the
kernel's 4,096-character path limit. Then `roost doctor`, `backup`, `export` and
`forget` died with a RecursionError (forget after it had deleted the rows and
written its marker, so the person's files stayed and every re-run failed the
same way), and `backup`/`export` left the long path's file out without a word.
The path gate no longer lets a tool build such a tree (tests/forge/test_deep_trees.py);
this is a home that holds one anyway (made before that, or by hand): the real
commands run on it.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from bridge.types.file_tree import remove_tree
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run
from tests.spine.test_export import setup_two_people
from tests.spine.test_file_tree import LONG, LONG_NAME, build

__all__ = ["fake"]
DEEP = 1_100  # levels of "d": past the recursion limit (1,000), the paths within PATH_MAX


async def test_doctor_backup_export_and_forget_on_a_deep_and_a_long_tree(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    try:
        await _commands(home, fake, tmp_path)
    finally:  # pytest's own clean-up is `shutil.rmtree`, which recurses
        for path in list(tmp_path.iterdir()):  # noqa: ASYNC240 - a test's clean-up
            remove_tree(path)


async def _commands(home: Path, fake: FakeOpenAI, tmp_path: Path) -> None:
    env = env_for(home, fake)
    await setup_two_people(home, env)
    workspace = home / "tenants" / "bob" / "global" / "workspace"
    (workspace / "deep").mkdir()
    build(workspace / "deep", ["d"] * DEEP, b"deep plums")
    (workspace / "long").mkdir()
    build(workspace / "long", [LONG_NAME] * LONG, b"long plums")

    code, out, err = await run(["doctor"], env)
    assert "Traceback" not in err and "RecursionError" not in err, err
    lines = {line.split()[1]: line for line in out.splitlines()}
    assert "disk" in lines, out  # it ran every check
    walked = re.search(r"and (\d+) more", lines["home"])  # the test's files are 0644
    assert walked is not None and int(walked[1]) > DEEP, out

    dest = tmp_path / "backup"
    code, out, err = await run(["backup", str(dest)], env)
    assert code == 1, (out, err)  # copied what it could, and says what it could not
    assert "backed up" in out and "NOT copied: 1 file" in err and "4096 bytes" in err
    deep_copy = (dest / "tenants/bob/global/workspace/deep").joinpath(*["d"] * DEEP)
    assert (deep_copy / "bottom.txt").read_bytes() == b"deep plums"

    out_zip = tmp_path / "bob.zip"
    code, _, err = await run(["export", "--tenant", "bob", "--out", str(out_zip)], env)
    assert code == 0, err
    with zipfile.ZipFile(out_zip) as zf:
        names = zf.namelist()
        deep_name = "files/workspace/deep/" + "d/" * DEEP + "bottom.txt"
        long_name = "files/workspace/long/" + f"{LONG_NAME}/" * LONG + "bottom.txt"
        assert zf.read(deep_name) == b"deep plums"
        assert zf.read(long_name) == b"long plums"
    assert len(names) == len(set(names))

    code, _, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0, err
    assert not (home / "tenants" / "bob").exists()
    assert not (home / "forgetting" / "bob.json").exists()
    assert (home / "tenants" / "alice").is_dir()

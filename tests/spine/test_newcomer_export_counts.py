"""`roost export` counts what `/export` counts (s46 newcomer, finding 11).

The CLI said "36 files" (the ZIP's entries, README and tables included), `/export`
"9 files, 65 database rows and 80 audit records" for the same content. The CLI now
gives the person's counts as `/export` does, then the ZIP's entries. Through the
real CLI; the figures are checked against the ZIP.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]  # the fixture, imported for the tests below

SAID = re.compile(
    r"^exported tenant local to (?P<out>\S+) \(mode 0600\): (?P<files>\d+) files?, "
    r"(?P<rows>\d+) database rows? and (?P<audit>\d+) audit records?, in "
    r"(?P<entries>\d+) ZIP entr(y|ies)\n$"
)


async def test_the_cli_names_files_rows_and_records_then_zip_entries(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    env = env_for(home, fake)
    assert (await run(["send", "/remember coffee: likes flat white"], env))[0] == 0
    out = tmp_path / "local.zip"
    code, said, err = await run(["export", "--tenant", "local", "--out", str(out)], env)
    assert code == 0, err
    found = SAID.match(said)
    assert found is not None, said
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
    assert int(found["entries"]) == len(names) and found["out"] == str(out)
    files = [n for n in names if n.startswith("files/")]
    assert int(found["files"]) == len(files) >= 1  # the memory topic at least
    assert int(found["rows"]) >= 1 and int(found["audit"]) >= 1

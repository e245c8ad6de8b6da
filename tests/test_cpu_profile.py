"""tests/cpu_profile.py's summary: seconds and processes started, per file or folder."""

from __future__ import annotations

from pathlib import Path

from tests import cpu_profile


def test_the_summary_sums_seconds_and_starts_per_folder_and_reads_older_rows(
    tmp_path: Path,
) -> None:
    (tmp_path / "gw0.tsv").write_text(
        "tests/a/test_x.py::t1\t1.0\t2.0\t3.0\t4\t2\n"
        "tests/a/test_y.py::t2\t0.5\t0.5\t1.0\t1\t0\n"
        "tests/b/test_z.py::t3\t0.1\t0.0\t0.2\n"  # written before the starts were counted
        "#END\t9.0\t8.0\t0.0\n"
    )
    lines = cpu_profile.summary(str(tmp_path), depth=2)
    assert lines[0].startswith("3 tests: worker CPU 1.6 s in tests, children 2.5 s;")
    assert lines[0].endswith("workers' whole runs: 9.0 s own, 8.0 s children")
    assert lines[1].split() == [
        *("file", "or", "folder", "tests", "own", "child", "cpu", "wall", "procs", "roost")
    ]
    assert lines[2].split() == ["tests/a", "2", "1.5", "2.5", "4.0", "4.0", "5", "2"]
    assert lines[3].split() == ["tests/b", "1", "0.1", "0.0", "0.1", "0.2", "0", "0"]

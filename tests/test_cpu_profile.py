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


def test_the_timeline_spreads_each_tests_cpu_over_its_wall_and_reads_the_idle_samples(
    tmp_path: Path,
) -> None:
    (tmp_path / "main.tsv").write_text(
        "#START\t0\t0\t0\t0\t0\t1000.000\n"
        "#IDLE\t3.0\t0\t0\t0\t0\t1005.000\n"  # 3 core-s idle in the first 10 s
        "#IDLE\t8.0\t0\t0\t0\t0\t1015.000\n"  # 5 more in the second
        "#END\t1.0\t30.0\t0\t0\t0\t1020.000\n"
    )
    (tmp_path / "gw0.tsv").write_text(
        "tests/a/test_x.py::t1\t2.0\t2.0\t10.0\t1\t1\t1000.000\n"  # 0.4 cores over 0..10 s
        "tests/a/test_x.py::t2\t1.0\t0.0\t5.0\t0\t0\t1010.000\n"  # 0.2 cores over 10..15 s
        "#END\t5.0\t2.0\t0\t0\t0\t1016.000\n"
    )
    (tmp_path / "gw1.tsv").write_text(
        "tests/b/test_y.py::t3\t10.0\t0.0\t10.0\t0\t0\t1005.000\n"  # 1 core over 5..15 s
        "tests/b/test_z.py::t4\t0.0\t0.0\t0.0\t0\t0\t1015.000\n"  # no wall: no division
        "#END\t9.0\t0.0\t0\t0\t0\t1019.000\n"
    )
    lines = cpu_profile.timeline(str(tmp_path), step=10.0, cores=2, last=1)
    assert lines[1].split() == ["0", "1.50", "0.90", "0.30"]
    assert lines[2].split() == ["10", "1.00", "0.60", "0.50"]
    assert lines[3].split() == ["20", "0.00", "0.00", "0.00"]
    assert (
        lines[4]
        == "run 20.0 s; 2 cores idle 45.0 core-s by the tests' CPU, 8.0 core-s by /proc/stat"
    )
    assert lines[5] == "gw0: ends at 16.0 s, 15.0 s in its tests; last:"
    assert lines[6].split() == ["10.0", "+", "5.00", "s", "(cpu", "1.00)", "tests/a/test_x.py::t2"]
    assert lines[7] == "gw1: ends at 19.0 s, 10.0 s in its tests; last:"
    assert lines[8].endswith("tests/b/test_z.py::t4")
    assert cpu_profile.summary(str(tmp_path))[0].startswith("4 tests: worker CPU 13.0 s")


def test_the_timeline_of_rows_without_start_times(tmp_path: Path) -> None:
    (tmp_path / "gw0.tsv").write_text("tests/a/test_x.py::t1\t1.0\t2.0\t3.0\t4\t2\n")
    assert cpu_profile.timeline(str(tmp_path)) == [
        f"{tmp_path}: no test has a start time (recorded before they were)"
    ]

"""Layer 4: the path gate, exercised directly on a real directory tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from forge.pathgate import PathDenied, PathGate


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("hello")
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    return ws, outside


def test_reads_and_writes_inside(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    gate = PathGate(ws)
    with gate.open("sub/a.txt") as f:
        assert f.read() == "hello"
    with gate.open("./sub/new.txt", "w") as f:
        f.write("x")
    with gate.open(str(ws / "sub" / "new.txt"), "a") as f:
        f.write("y")
    with gate.open("sub/new.txt", "rb") as f:
        assert f.read() == b"xy"
    assert gate.listdir() == ["sub"]
    assert gate.listdir("sub") == ["a.txt", "new.txt"]


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "sub/../../secret.txt",
        "/etc/passwd",
        "/proc/self/environ",
        "/dev/zero",
        "a\x00b",
        "x" * 256,
        "a/" * 600,
        "",
        ".",
        42,
    ],
)
def test_refused(tree: tuple[Path, Path], path: object) -> None:
    gate = PathGate(tree[0])
    with pytest.raises(PathDenied):
        gate.open(path)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    [
        "\udcff\n.txt",  # session 30's attacker pass: the export's ZIP could not name it
        "a\nb.txt",
        "tab\there.txt",
        "esc\x1b]0;x.txt",
        "del\x7f.txt",
        "c1\x9b.txt",
        "invoice\u202efdp.exe",  # reads as invoiceexe.pdf
        "iso\u2066late.txt",
        "lone\ud800.txt",
        "dir\u202e/x.txt",
    ],
)
def test_names_that_do_not_print_as_they_are_are_refused(
    tree: tuple[Path, Path], name: str
) -> None:
    gate = PathGate(tree[0])
    with pytest.raises(PathDenied, match="use names that print as they are"):
        gate.open(name, "w")
    assert sorted(os.listdir(tree[0])) == ["sub"]  # nothing made


def test_printable_names_of_any_script_still_work(tree: tuple[Path, Path]) -> None:
    gate = PathGate(tree[0])
    for name in ("Müller.txt", "日本語.md", "שלום.txt", "emoji-🦉.csv", "a b c.txt"):
        with gate.open(name, "w") as f:
            f.write("x")
        with gate.open(name) as f:
            assert f.read() == "x"


def test_symlink_to_outside_refused(tree: tuple[Path, Path]) -> None:
    ws, outside = tree
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(outside.parent)
    gate = PathGate(ws)
    with pytest.raises(PathDenied, match="symbolic link"):
        gate.open("link.txt")
    with pytest.raises(PathDenied):
        gate.open("linkdir/secret.txt")
    with pytest.raises(PathDenied):
        gate.open("link.txt", "w")
    assert outside.read_text() == "top secret"


def test_symlink_inside_workspace_also_refused(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    (ws / "alias.txt").symlink_to(ws / "sub" / "a.txt")
    with pytest.raises(PathDenied):
        PathGate(ws).open("alias.txt")


def test_hard_link_refused_and_not_truncated(tree: tuple[Path, Path]) -> None:
    ws, outside = tree
    os.link(outside, ws / "hard.txt")
    gate = PathGate(ws)
    with pytest.raises(PathDenied, match="hard links"):
        gate.open("hard.txt")
    with pytest.raises(PathDenied):
        gate.open("hard.txt", "w")
    assert outside.read_text() == "top secret"


def test_fifo_and_device_refused(tree: tuple[Path, Path]) -> None:
    ws, _ = tree
    os.mkfifo(ws / "fifo")
    gate = PathGate(ws)
    with pytest.raises(PathDenied, match="not a regular file"):
        gate.open("fifo")  # must not block waiting for a writer
    with pytest.raises(PathDenied):
        gate.open("sub")
    if os.geteuid() == 0:
        os.mknod(ws / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        with pytest.raises(PathDenied, match="not a regular file"):
            gate.open("null", "w")


def test_exclusive_and_missing(tree: tuple[Path, Path]) -> None:
    gate = PathGate(tree[0])
    with pytest.raises(FileExistsError):
        gate.open("sub/a.txt", "x")
    with pytest.raises(FileNotFoundError):
        gate.open("nope.txt")
    with pytest.raises(FileNotFoundError):
        gate.open("nodir/new.txt", "w")
    with pytest.raises(ValueError):
        gate.open("sub/a.txt", "rw")


def test_component_swapped_for_symlink_is_caught(tree: tuple[Path, Path]) -> None:
    """A directory replaced by a symlink between calls is refused at open time."""
    ws, outside = tree
    gate = PathGate(ws)
    with gate.open("sub/a.txt") as f:
        assert f.read() == "hello"
    os.rename(ws / "sub", ws / "old")
    (ws / "sub").symlink_to(outside.parent)
    with pytest.raises(PathDenied):
        gate.open("sub/secret.txt")


def test_mode_table_answers_like_the_parser() -> None:
    """`parse_mode` looks valid modes up in a table made by the parser: for every
    string of up to four of these characters, the same answer or the same refusal."""
    import itertools

    from forge import pathnames

    def outcome(fn: object, mode: str) -> object:
        try:
            return fn(mode)  # type: ignore[operator]
        except ValueError as exc:
            return str(exc)

    valid = 0
    for k in range(5):
        for chars in itertools.product("rwaxbt+U", repeat=k):
            mode = "".join(chars)
            answer = outcome(pathnames.parse_mode, mode)
            assert answer == outcome(pathnames._parse_mode, mode), mode
            valid += isinstance(answer, tuple)
    assert valid == len(pathnames._PARSED) == 76
    for odd in (None, b"r", 1, ["r"]):
        with pytest.raises(ValueError):
            pathnames.parse_mode(odd)  # type: ignore[arg-type]

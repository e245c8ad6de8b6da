"""Two calls of one tenant, racing, cannot build a tree deeper than the gate's path
limit (atk3 F4). The gate checked a moved folder (`_fits`) and then renamed it;
another call could, in between, move a folder INTO the one being moved, or put
something into a folder (through the descriptor it had already opened) that the
first call had meanwhile moved deeper: 1,769-byte paths where the gate takes
1,024. Now each rename, mkdir and file creation checks again after it acted and
undoes itself when the limit no longer holds; of two racing operations the later
one's check sees the other's result.

The interleavings are made exactly, not by chance: the second call's operation is
run at the very point the first one reached (its check done, its act not yet),
through two gates on one workspace, as two calls of the tenant have.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from forge.pathgate import PathDenied, PathGate
from forge.pathnames import MAX_PATH_BYTES
from forge.write_budget import WriteBudget

DEEP = "/".join(["c" * 220] * 4)  # 883 bytes: room for a short name below, no more
LONG = "y" * 220


def _longest(root: Path) -> int:
    """Bytes of the longest path below `root` (folders and files)."""
    longest = 0
    for top, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            rel = os.path.relpath(os.path.join(top, name), root)
            longest = max(longest, len(rel.encode()))
    return longest


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / DEEP).mkdir(parents=True)
    (tmp_path / "X").mkdir()
    (tmp_path / "Y").joinpath(*[LONG] * 3).mkdir(parents=True)
    return tmp_path


def _once(before: Callable[[], object], then: Callable[..., object]) -> Callable[..., object]:
    """`then`, with `before` run ahead of its first call only (the other call's step)."""
    pending = [before]

    def hooked(*args: object) -> object:
        result = then(*args)
        while pending:
            pending.pop()()
        return result

    return hooked


def test_a_folder_moved_into_the_one_being_moved_is_caught(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mover's check has passed; the inserter moves Y into X; the mover renames."""
    mover, inserter = PathGate(ws), PathGate(ws)
    insert = partial(inserter.rename, "Y", "X/" + LONG)
    monkeypatch.setattr(mover, "_fits", _once(insert, mover._fits))
    with pytest.raises(PathDenied, match="undone, try again"):
        mover.rename("X", DEEP + "/X")
    assert (ws / "X" / LONG).is_dir()  # the move was undone, the insert stands
    assert _longest(ws) <= MAX_PATH_BYTES


def test_a_rename_into_a_folder_moved_deeper_meanwhile_is_caught(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inserter holds X's descriptor and has checked Y at `X/...`; the mover moves X
    deep; the inserter's rename lands in the deep X."""
    mover, inserter = PathGate(ws), PathGate(ws)
    move = partial(mover.rename, "X", DEEP + "/X")
    monkeypatch.setattr(inserter, "_fits", _once(move, inserter._fits))
    with pytest.raises(PathDenied, match="undone, try again"):
        inserter.rename("Y", "X/" + LONG)
    assert (ws / "Y").is_dir() and (ws / DEEP / "X").is_dir()
    assert _longest(ws) <= MAX_PATH_BYTES


def _move_after_walk(gate: PathGate, mover: PathGate, monkeypatch: pytest.MonkeyPatch) -> None:
    move = partial(mover.rename, "X", DEEP + "/X")
    monkeypatch.setattr(gate, "_walk", _once(move, gate._walk))


def test_a_folder_made_in_a_folder_moved_deeper_meanwhile_is_removed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, mover = PathGate(ws), PathGate(ws)
    _move_after_walk(gate, mover, monkeypatch)
    with pytest.raises(PathDenied, match="nothing was made"):
        gate.mkdir("X/" + LONG)
    assert os.listdir(ws / DEEP / "X") == []
    assert _longest(ws) <= MAX_PATH_BYTES


def test_a_file_made_in_a_folder_moved_deeper_meanwhile_is_removed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = PathGate(ws, budget=WriteBudget(1 << 20, 1 << 20))
    _move_after_walk(gate, PathGate(ws), monkeypatch)
    with pytest.raises(PathDenied, match="nothing was made"):
        gate.open("X/" + "f" * 200, "w").close()
    assert os.listdir(ws / DEEP / "X") == []
    assert _longest(ws) <= MAX_PATH_BYTES


def test_without_a_race_nothing_changes(ws: Path) -> None:
    """The second checks pass for ordinary moves, folders and files."""
    gate = PathGate(ws, budget=WriteBudget(1 << 20, 1 << 20))
    gate.rename("X", DEEP + "/X")
    gate.mkdir(DEEP + "/X/sub")
    with gate.open(DEEP + "/X/sub/f.txt", "w") as f:
        f.write("x")
    gate.rename(DEEP + "/X", "X")
    assert (ws / "X" / "sub" / "f.txt").read_text() == "x"

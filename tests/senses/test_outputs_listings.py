"""`outputs.Listings` against the plain listings (`seen`, `new_files`): the same files
handed out after every turn whatever was written, renamed, removed or linked in
`outputs/` before and during it, by this process or another (a file written through
a hard link outside `outputs/` too); and no listing at all while the directory watch
vouches that `outputs/` is still empty or missing."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bridge.core.dirwatch import DirWatch
from bridge.senses import outputs
from bridge.senses.outputs import Listings
from tests.waits import HANG_S


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[DirWatch]:
    opened = DirWatch.open((str(tmp_path),))
    if opened is None:
        pytest.skip("no inotify here")
    yield opened
    opened.close()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every listing `Listings` takes (the plain functions' own are counted too)."""
    taken: list[Path] = []
    real = outputs.seen

    def counted(path: Path) -> outputs.Seen:
        taken.append(path)
        return real(path)

    monkeypatch.setattr(outputs, "seen", counted)
    return taken


def _ops(out: Path, other: Path, rng: random.Random) -> list[Callable[[], None]]:
    """Changes a tool, a channel or the person may make to `outputs/` (each a no-op
    when it cannot apply now)."""

    def names() -> list[str]:
        return sorted(os.listdir(out)) if out.is_dir() else []

    def pick() -> Path | None:
        found = [n for n in names() if (out / n).is_file()]
        return out / rng.choice(found) if found else None

    def create() -> None:
        out.mkdir(exist_ok=True)
        (out / f"f{rng.randrange(6)}.txt").write_text("x" * rng.randrange(1, 50))

    def rewrite() -> None:
        target = pick()
        if target is not None:
            target.write_text("y" * rng.randrange(1, 50))

    def touch() -> None:
        target = pick()
        if target is not None:
            stamp = rng.randrange(10**9, 2 * 10**9)
            os.utime(target, ns=(stamp, stamp))

    def remove() -> None:
        target = pick()
        if target is not None:
            target.unlink()

    def atomic() -> None:  # a hidden temp file renamed into place
        out.mkdir(exist_ok=True)
        temp = out / ".tmp-save"
        temp.write_text("z" * rng.randrange(1, 50))
        temp.replace(out / f"f{rng.randrange(6)}.txt")

    def moved_in() -> None:  # written elsewhere, renamed into outputs/
        out.mkdir(exist_ok=True)
        made = other / "made.csv"
        made.write_text("a;b\n" * rng.randrange(1, 9))
        made.replace(out / f"m{rng.randrange(3)}.csv")

    def by_child() -> None:  # another process writes it (the sandbox does)
        name = f"c{rng.randrange(3)}.png"
        code = "import os,sys; os.makedirs(sys.argv[1], exist_ok=True); "
        code += "open(os.path.join(sys.argv[1], sys.argv[2]), 'ab').write(b'p')"
        # `-S`: no `site` (the venv's .pth files), which the write does not need: a
        # third of a plain start-up's CPU, and there are dozens of these per test
        subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, str(out), name], check=True, timeout=HANG_S
        )

    def through_link() -> None:  # a file with another name outside outputs/, written there
        links = [p for p in other.iterdir() if p.name.startswith("link")]
        if links:
            with open(rng.choice(links), "a") as fh:
                fh.write("w")

    def drop_dir() -> None:
        if out.is_dir():
            for n in names():
                (out / n).unlink()
            out.rmdir()

    return [create, rewrite, touch, remove, atomic, moved_in, by_child, through_link, drop_dir]


def _link(out: Path, other: Path, rng: random.Random) -> None:
    """Between turns: a file of outputs/ gets a second name outside it."""
    found = [p for p in out.iterdir() if p.is_file()] if out.is_dir() else []
    if found:
        target = other / f"link{rng.randrange(2)}"
        target.unlink(missing_ok=True)
        os.link(rng.choice(found), target)


@pytest.mark.parametrize("seed", range(12))
def test_listings_hand_out_what_the_plain_listing_does(
    tmp_path: Path, watch: DirWatch, seed: int
) -> None:
    rng = random.Random(seed)
    out, other = tmp_path / "workspace" / "outputs", tmp_path / "workspace" / "other"
    other.mkdir(parents=True)
    ops = _ops(out, other, rng)
    listings = Listings(watch)
    for _turn in range(40):
        for _ in range(rng.choice((0, 0, 1, 2))):  # between turns
            rng.choice(ops)()
        if rng.random() < 0.15:
            _link(out, other, rng)
        expected_before = outputs.seen(out)
        before, stamp = listings.before(out)
        assert before == expected_before
        for _ in range(rng.choice((0, 0, 0, 1, 3))):  # during the turn
            rng.choice(ops)()
        expected = outputs.new_files(out, outputs.seen(out), expected_before)
        assert listings.after(out, before, stamp) == expected


def test_an_empty_outputs_is_not_listed_again(
    tmp_path: Path, watch: DirWatch, scans: list[Path]
) -> None:
    out = tmp_path / "workspace" / "outputs"
    out.mkdir(parents=True)
    listings = Listings(watch)
    before, stamp = listings.before(out)  # the first listing
    assert listings.after(out, before, stamp) == ()
    for _ in range(3):  # turns that wrote nothing: not one listing
        before, stamp = listings.before(out)
        assert listings.after(out, before, stamp) == ()
    assert scans == [out]
    before, stamp = listings.before(out)
    (out / "chart.png").write_bytes(b"png")  # a tool writes during the turn
    assert [f.name for f in listings.after(out, before, stamp)] == ["chart.png"]
    (out / "chart.png").unlink()  # the person's tool cleans up between turns
    before, stamp = listings.before(out)
    assert listings.after(out, before, stamp) == ()
    before, stamp = listings.before(out)  # empty again, and vouched for: no listing
    assert listings.after(out, before, stamp) == ()
    assert scans == [out, out, out]


def test_a_missing_outputs_is_vouched_for_by_its_parent(
    tmp_path: Path, watch: DirWatch, scans: list[Path]
) -> None:
    out = tmp_path / "workspace" / "outputs"
    out.parent.mkdir()
    listings = Listings(watch)
    for _ in range(3):
        before, stamp = listings.before(out)
        assert stamp is not None and listings.after(out, before, stamp) == ()
    assert scans == [out]
    before, stamp = listings.before(out)
    out.mkdir()
    (out / "report.pdf").write_bytes(b"%PDF")
    assert [f.name for f in listings.after(out, before, stamp)] == ["report.pdf"]


def test_a_file_there_or_no_watch_lists_every_time(
    tmp_path: Path, watch: DirWatch, scans: list[Path]
) -> None:
    out = tmp_path / "workspace" / "outputs"
    out.mkdir(parents=True)
    plain = Listings(None)
    before, stamp = plain.before(out)
    assert stamp is None and plain.after(out, before, stamp) == ()
    assert len(scans) == 2
    (out / "a.txt").write_text("a")
    listings = Listings(watch)
    before, stamp = listings.before(out)
    assert stamp is None  # it may have a name outside outputs/: not vouched for
    os.link(out / "a.txt", tmp_path / "elsewhere")  # no event of outputs/
    (tmp_path / "elsewhere").write_text("changed")
    assert [f.name for f in listings.after(out, before, stamp)] == ["a.txt"]

"""A file a tool writes into `outputs/` under a name with control, format (bidi) or
separator characters, or bytes that are no UTF-8, is handed out under a safe name:
those characters become `_`, the extension stays where it was, and the file is
renamed to it, so neither its name nor its path holds one."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from bridge.senses import outputs
from bridge.senses.outputs import Listings, seen

HOSTILE = {
    "invoice\u202egpj.exe": "invoice_gpj.exe",  # shown as "invoiceexe.jpg" unescaped
    "two\nlines.txt": "two_lines.txt",
    "zero\u200bwidth.png": "zero_width.png",
    "iso\u2067late\u2069.csv": "iso_late_.csv",
    "para\u2029graph.md": "para_graph.md",
    "bell\x07.json": "bell_.json",
}
PLAIN = ("plain.txt", "café ü.txt", "tab and space.pdf")


def write(out: Path, name: str | bytes, text: bytes = b"x") -> None:
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    with open(os.path.join(os.fsencode(out), raw), "wb") as fh:
        fh.write(text)


def test_unsafe_names_are_handed_out_and_renamed_safely(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    out.mkdir()
    write(out, "old.txt")
    before = seen(out)
    for name in (*HOSTILE, *PLAIN):
        write(out, name, name.encode("utf-8", "surrogatepass"))
    write(out, b"latin\xe9.csv", b"bytes")  # no UTF-8: a lone surrogate in the str name
    files = outputs.new_files(out, seen(out), before)
    names = {f.name for f in files}
    assert names == {*HOSTILE.values(), *PLAIN, "latin_.csv"}
    for f in files:
        assert f.path == out / f.name  # the path holds the safe name too
        assert f.path.is_file()
        f.name.encode("utf-8")  # no lone surrogate left
        assert not [c for c in f.name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    by_name = {f.name: f for f in files}
    assert by_name["zero_width.png"].mime == "image/png"
    assert by_name["invoice_gpj.exe"].path.read_bytes() == "invoice\u202egpj.exe".encode()
    assert by_name["latin_.csv"].path.read_bytes() == b"bytes"
    left = sorted(os.listdir(out))
    assert left == sorted({"old.txt", *names})  # renamed: the hostile names are gone


def test_a_taken_safe_name_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    out.mkdir()
    write(out, "report_.txt", b"the person's own")
    before = seen(out)
    write(out, "report\u202e.txt", b"new")
    (f,) = outputs.new_files(out, seen(out), before)
    assert f.name == "report_ (2).txt" and f.path.read_bytes() == b"new"
    assert (out / "report_.txt").read_bytes() == b"the person's own"


def test_listings_hand_out_the_safe_name(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    out.mkdir()
    listings = Listings(None)
    before, stamp = listings.before(out)
    write(out, "photo\u202egnp.exe")
    (f,) = listings.after(out, before, stamp)
    assert (f.name, f.path) == ("photo_gnp.exe", out / "photo_gnp.exe")


def test_a_plain_name_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "outputs"
    out.mkdir()
    for name in PLAIN:
        write(out, name)
    files = outputs.new_files(out, seen(out), frozenset())
    assert sorted((f.name, f.path) for f in files) == sorted((n, out / n) for n in PLAIN)

"""`verify` accepts a line only when it is the writer's canonical encoding, byte for byte.

A JSON parser forgives a lot that the writer never writes: a key given twice
(the parser keeps the last value, so a forged first value hides in plain
sight), CRLF line ends, spaces after separators, `\\u` escapes of ASCII
characters. Each of these is a violation of its own kind, with and without
the HMAC key, and `roost audit verify` names it.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_helpers import KEY, ChainFactory

from bridge.audit import verify
from bridge.cli.audit import add_audit_parser, run_audit_command

Edit = Callable[[bytes], bytes]

# Every edit keeps the parsed record (so its hash and MAC still match) and
# changes only its encoding; record 4 (line 4) is the one edited.
EDITS: dict[str, tuple[Edit, str]] = {
    # A forged value first, the genuine one last: json.loads keeps the last.
    "duplicate top-level key": (
        lambda line: line.replace(b'{"details":', b'{"event":"vault.opened","details":', 1),
        "duplicate_key",
    ),
    "duplicate key inside details": (
        lambda line: line.replace(b'{"details":{', b'{"details":{"outcome":"error",', 1),
        "duplicate_key",
    ),
    "CRLF line end": (lambda line: line.replace(b"\n", b"\r\n"), "not_canonical"),
    "space after a colon": (
        lambda line: line.replace(b'"event":', b'"event": ', 1),
        "not_canonical",
    ),
    "space after a comma": (lambda line: line.replace(b",", b", ", 1), "not_canonical"),
    "trailing space": (lambda line: line.replace(b"\n", b" \n"), "not_canonical"),
    "leading tab": (lambda line: b"\t" + line, "not_canonical"),
    "\\u escape of an ASCII letter": (
        lambda line: line.replace(b'"event":"t', b'"event":"\\u0074', 1),
        "not_canonical",
    ),
    "\\u escape inside a details value": (
        lambda line: line.replace(b'"outcome":"ok"', b'"outcome":"\\u006fk"', 1),
        "not_canonical",
    ),
    "keys out of order": (
        lambda line: _swap_first_two_keys(line),
        "not_canonical",
    ),
    "space before a comma": (
        lambda line: line.replace(b'"seq":4,', b'"seq":4 ,', 1),
        "not_canonical",
    ),
}


def _swap_first_two_keys(line: bytes) -> bytes:
    """Move `"event":...` before `"details":{...}` (the record stays the same)."""
    body = line.rstrip(b"\n")
    start = body.index(b',"event":')
    end = body.index(b",", start + 1)
    event = body[start + 1 : end]
    return b"{" + event + b"," + body[1:start] + body[end:] + b"\n"


def _edit_line(path: Path, number: int, edit: Edit) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    edited = edit(lines[number - 1])
    assert edited != lines[number - 1], "the edit must change the line"
    lines[number - 1] = edited
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize("keyed", [False, True], ids=["no-key", "hmac-key"])
@pytest.mark.parametrize("case", sorted(EDITS))
async def test_a_non_canonical_line_is_a_violation(
    make_chain: ChainFactory, case: str, keyed: bool
) -> None:
    key = KEY if keyed else None
    path = await make_chain(8, key)
    assert verify(path, key).ok
    edit, kind = EDITS[case]
    _edit_line(path, 4, edit)
    result = verify(path, key)
    assert (result.ok, result.kind, result.first_bad_seq, result.line) == (False, kind, 4, 4)
    assert result.records == 3


async def test_cli_names_a_duplicate_key(make_chain: ChainFactory, tmp_path: Path) -> None:
    path = await make_chain(6, KEY)
    key_file = tmp_path / "secrets" / "key"
    key_file.parent.mkdir()
    key_file.write_bytes(KEY)
    _edit_line(path, 2, EDITS["duplicate top-level key"][0])
    parser = argparse.ArgumentParser(prog="roost")
    add_audit_parser(parser.add_subparsers(dest="command"))
    out, err = io.StringIO(), io.StringIO()
    code = run_audit_command(
        parser.parse_args(["audit", "verify"]), path.parent.parent, key_file, out=out, err=err
    )
    assert code == 1
    assert out.getvalue().startswith("audit chain violation: duplicate_key at record 2:")


async def test_writer_lines_are_canonical(make_chain: ChainFactory) -> None:
    """The writer's own output passes the strict check (also with non-ASCII names)."""
    path = await make_chain(30, KEY)
    assert verify(path, KEY).ok
    assert verify(path).ok

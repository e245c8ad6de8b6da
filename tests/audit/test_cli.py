"""`roost audit verify|tail` exit codes and output, through the real parser."""

from __future__ import annotations

from pathlib import Path

import pytest
from audit_helpers import KEY, ChainFactory, run


async def test_verify_exit_codes(make_chain: ChainFactory, tmp_path: Path, key_file: Path) -> None:
    path = await make_chain(12, KEY)
    home = path.parent.parent
    code, out, _ = run(["audit", "verify"], home, key_file)
    assert (code, out) == (0, "audit chain intact: 12 records (with HMAC key)\n")

    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + lines[6:]))
    code, out, _ = run(["audit", "verify"], home, key_file)
    assert code == 1
    assert "sequence_gap at record 7" in out

    code, _, err = run(["audit", "verify"], tmp_path / "nowhere")
    assert code == 2
    assert "cannot read" in err


async def test_verify_refuses_key_inside_audit_dir(make_chain: ChainFactory) -> None:
    path = await make_chain(2, KEY)
    inside = path.parent / "key"
    inside.write_bytes(KEY)
    code, _, err = run(["audit", "verify"], path.parent.parent, inside)
    assert code == 2
    assert "outside" in err


async def test_credentials_directory_key(
    make_chain: ChainFactory, key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await make_chain(3, b"another-key-for-this-chain-0000")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(key_file.parent))
    code, out, _ = run(["audit", "verify"], path.parent.parent)
    assert code == 1
    assert "bad_mac" in out


async def test_tail_filters(make_chain: ChainFactory) -> None:
    path = await make_chain(10)
    home = path.parent.parent
    code, out, _ = run(["audit", "tail", "-n", "3", "--tenant", "alice"], home)
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0
    assert [r[0] for r in rows] == ["6", "8", "10"]
    assert {r[2] for r in rows} == {"tool.called"}
    assert {r[3] for r in rows} == {"alice"}
    code, out, _ = run(["audit", "tail", "--type", "memory.saved"], home)
    assert (code, out) == (0, "")
    code, out, _ = run(["audit", "tail", "-n", "1", "--json"], home)
    assert '"seq": 10' in out


def test_tail_refuses_a_type_roost_never_records(capsys: pytest.CaptureFixture[str]) -> None:
    """s46: `--type pairing.revoke` (a typo) matched nothing and printed nothing, exit 0,
    as if no pairing had been revoked; now exit 2 naming the close event names."""
    with pytest.raises(SystemExit) as ended:
        run(["audit", "tail", "--type", "pairing.revoke"], Path("/nonexistent"))
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "'pairing.revoke' is not an event roost records: did you mean pairing.revoked" in err

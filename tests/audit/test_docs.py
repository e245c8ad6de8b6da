"""docs/audit.md is true: its verify script works, its catalogue passes redaction."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from audit_helpers import KEY, ChainFactory

from bridge.app.channels_up import PLATFORMS
from bridge.audit import redact
from bridge.audit.catalogue import EVENTS
from bridge.audit.schema import keyed_namer, sanitize, schemas_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "audit.md"

KINDS = schemas_for(PLATFORMS)  # the channels the daemon's chain keeps


def script(tmp_path: Path) -> Path:
    text = DOC.read_text()
    code = re.search(r"<!-- verify-script -->\n```python\n(.*?)```", text, re.S)
    assert code is not None
    path = tmp_path / "verify_chain.py"
    path.write_text(code.group(1))
    return path


def run(script_path: Path, *args: Path) -> int:
    cmd = [sys.executable, str(script_path), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, check=False).returncode


async def test_operator_script_agrees_with_verify(make_chain: ChainFactory, tmp_path: Path) -> None:
    path = await make_chain(15, KEY)
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY)
    check = script(tmp_path)
    assert run(check, path) == 0
    assert run(check, path, key_file) == 0
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:10]))
    assert run(check, path) == 1  # cut tail
    path.write_bytes(b"".join(lines).replace(b'"ms":3,', b'"ms":4,'))
    assert run(check, path) == 1  # edited byte
    forged = lines[4].replace(b'{"details":', b'{"event":"vault.opened","details":', 1)
    path.write_bytes(b"".join([*lines[:4], forged, *lines[5:]]))
    assert run(check, path) == 1  # a duplicated key, forged value first
    path.write_bytes(b"".join(lines).replace(b"\n", b"\r\n"))
    assert run(check, path) == 1  # CRLF


# Fields the older key heuristic (`redact`, no longer used by the writer) drops by
# name although the writer's schema holds them to a closed enum: checked below instead.
ENUM_NAMED_LIKE_TEXT = {("outbox.failed", "error")}


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_catalogue_examples_pass_redaction_and_are_documented(event: str) -> None:
    example = {k: v for k, v in EVENTS[event].items() if (event, k) not in ENUM_NAMED_LIKE_TEXT}
    assert redact(example) == example
    assert f"| `{event}` |" in DOC.read_text()


@pytest.mark.parametrize(("event", "field"), sorted(ENUM_NAMED_LIKE_TEXT))
def test_an_enum_named_like_text_keeps_only_its_words(event: str, field: str) -> None:
    namer = keyed_namer(b"k" * 32)
    assert sanitize(event, "t", EVENTS[event], namer, KINDS) == EVENTS[event]
    typed = {**EVENTS[event], field: "Forbidden: bot was blocked by the user 'Alice'"}
    assert sanitize(event, "t", typed, namer, KINDS)["_dropped"] == [field]

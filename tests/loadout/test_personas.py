"""Personas: shipped files validate; broken files are skipped and reported; operator overrides."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.loadout.personas import SHIPPED, Personas


def test_shipped_personas_validate() -> None:
    table = Personas([SHIPPED])
    got = table.all()
    assert {"default", "forge"} <= set(got) and table.problems == []
    forge = got["forge"].append_system
    assert "forge_create" in forge and "/tool save <name>" in forge


def test_invalid_files_are_skipped_and_operator_overrides(tmp_path: Path) -> None:
    op = tmp_path / "personas"
    op.mkdir()
    (op / "broken.json").write_text("{not json")
    (op / "extra.json").write_text(json.dumps({"name": "extra", "description": "d", "x": 1}))
    (op / "wrong.json").write_text(json.dumps({"name": "other", "description": "d"}))
    (op / "forge.json").write_text(
        json.dumps({"name": "forge", "description": "mine", "append_system": "OPERATOR FORGE"})
    )
    table = Personas([SHIPPED, op])
    got = table.all()
    assert "broken" not in got and "extra" not in got and "other" not in got
    assert got["forge"].append_system == "OPERATOR FORGE"
    assert len(table.problems) == 3
    assert table.get("nope") == got["default"]

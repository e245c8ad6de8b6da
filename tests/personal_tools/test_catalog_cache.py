"""The tool catalog parses a metadata file once per version of it, and never serves a stale one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.core.filecache import FileCache
from bridge.personal_tools import catalog as catalog_module
from bridge.personal_tools.catalog import ToolCatalog
from forge import toolmeta
from forge.toolmeta import ToolMeta


def write(tools: Path, name: str, description: str) -> None:
    meta = ToolMeta(name, description, {"type": "object"}, (), "0" * 64, 1_000)
    tmp = tools / f".{name}.tmp"
    tmp.write_bytes(toolmeta.dumps(meta))
    tmp.replace(tools / toolmeta.filename(name))  # as the library writes it: a new inode


def test_unchanged_files_are_not_parsed_again_and_changes_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    real = catalog_module.loads

    def counting(data: bytes | str, name: str | None = None) -> ToolMeta:
        parsed.append(name or "")
        return real(data, name)

    monkeypatch.setattr(catalog_module, "loads", counting)
    tools = tmp_path / "tools"
    tools.mkdir()
    write(tools, "alpha", "first")
    write(tools, "beta", "second")
    (tools / "me.broken.json").write_text("{not json")
    catalog = ToolCatalog(FileCache(), lambda: 0)

    first = catalog.entries(tools)
    assert [(m.name, m.description) for m in first] == [("alpha", "first"), ("beta", "second")]
    assert sorted(parsed) == ["alpha", "beta", "broken"]
    for _ in range(3):
        assert catalog.entries(tools) == first
    assert len(parsed) == 3  # nothing changed: nothing parsed, the broken file neither

    write(tools, "beta", "second, changed")
    (tools / "me.broken.json").unlink()
    again = catalog.entries(tools)
    assert [(m.name, m.description) for m in again] == [
        ("alpha", "first"),
        ("beta", "second, changed"),
    ]
    assert parsed[3:] == ["beta"]

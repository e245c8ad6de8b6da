"""bench/recall_bench.py --cache: an index is built once per size and reused after."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.recall_bench import scale
from bridge.recall.index import Message


def test_a_cached_index_is_built_once_then_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [
        Message("c", str(i), "user", f"the falcon {i} wore a leather hood", i, "web", "Jo")
        for i in range(20)
    ]
    scale(base, ["falcon hood", "leather"], 300, tmp_path)
    first = capsys.readouterr().out
    assert "msg/s" in first and "import reused" not in first
    assert (tmp_path / "300" / "built").read_text() == "300\n"
    scale(base, ["falcon hood", "leather"], 300, tmp_path)
    again = capsys.readouterr().out
    assert "import reused" in again and "300 messages" in again

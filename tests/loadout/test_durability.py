"""Durability: writers in two processes lose nothing; replies never carry a vault value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bridge.core.config import Settings
from bridge.loadout import vault
from bridge.memory.files import index_entries
from bridge.types.tenant_dirs import TenantDirs
from tests.loadout.conftest import inbound
from tests.waits import HANG_S

WRITER = """
import sys
from pathlib import Path
from bridge.memory.store import MemoryStore, Provenance
from bridge.types.tenant_dirs import TenantDirs
dirs, tag = TenantDirs("alice", Path(sys.argv[1])), sys.argv[2]
store = MemoryStore(100_000, 6_000)
for i in range(25):
    prov = Provenance("person", "cli", "x", "m")
    store.save(dirs, f"{tag} {i}", "user", f"{tag}{i}", "c", prov, 0)
"""


def test_two_processes_saving_at_once_lose_nothing(alice: TenantDirs) -> None:
    repo = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(alice.root), tag], cwd=repo)
        for tag in ("left", "right")
    ]
    assert [p.wait(timeout=HANG_S) for p in procs] == [0, 0]
    entries = index_entries((alice.memory / "MEMORY.md").read_text())
    assert len(entries) == 50
    assert len(list(alice.memory.glob("user_*.md"))) == 50
    assert not list(alice.memory.glob(".tmp-*"))


async def test_reply_echoing_a_secret_is_masked(settings: Settings, make_roost: Any) -> None:
    dirs = TenantDirs.of(settings.home, "local").ensure()
    vault.set_value(dirs, "GITHUB_TOKEN", "ghp_abcdefghijklmnop")
    roost = await make_roost(settings, "Your token is ghp_abcdefghijklmnop, keep it safe.")
    pieces: list[str] = []

    async def on_delta(piece: str) -> None:
        pieces.append(piece)

    final = await roost.core.handle(inbound("what is my token?"), on_delta)
    assert "ghp_abcdefghijklmnop" not in final.text and "[vault:GITHUB_TOKEN]" in final.text
    assert "ghp_abcdefghijklmnop" not in "".join(pieces)
    assert "".join(pieces) == final.text
    assert "ghp_abcdefghijklmnop" not in roost.backend.requests[0].system
    assert "GITHUB_TOKEN" in roost.backend.requests[0].system

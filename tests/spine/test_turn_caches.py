"""What roost remembers between turns never hides a change made between them.

The per-turn fast paths remember only names (tenant directory layouts, file
paths, pure decisions); every turn still checks the files themselves, so an
edit between two turns shows in the second turn's prompt, and a removed
tenant tree is made again.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

from bridge.app.build import Roost
from bridge.core.config import Settings
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import web_msg

msg = web_msg


def system_prompt(roost: Roost, index: int) -> str:
    backend: Any = roost.backend
    return str(backend.requests[index].system)


def write_tool(dirs: TenantDirs, name: str, description: str) -> None:
    record = {
        "name": name,
        "description": description,
        "schema": {"type": "object", "properties": {}},
        "sha256": "0" * 64,
        "created_ms": 1_700_000_000_000,
    }
    (dirs.tools / f"me.{name}.json").write_text(json.dumps(record))


async def test_files_edited_between_turns_show_in_the_next_prompt(
    roost: Roost, settings: Settings
) -> None:
    dirs = TenantDirs.of(settings.home, "local")
    assert (await roost.core.handle(msg("first", 1))).kind == "answer"
    first = system_prompt(roost, 0)
    assert "likes-green-tea" not in first

    (dirs.root / "USER.md").write_text("Name: Kim\nlikes-green-tea\n")
    (dirs.root / "STEERING.md").write_text("Always answer in-haiku-form.\n")
    (settings.home / "STEERING.md").write_text("Operator says: be-brief-please.\n")
    (dirs.skills / "csv_cleanup.md").write_text(
        "---\nname: csv_cleanup\ndescription: tidy-csv-exports\n---\nsteps\n"
    )
    write_tool(dirs, "totals", "adds-up-columns")
    assert (await roost.core.handle(msg("second", 2))).kind == "answer"
    second = system_prompt(roost, 1)
    for needle in (
        "likes-green-tea",
        "in-haiku-form",
        "be-brief-please",
        "tidy-csv-exports",
        "adds-up-columns",
    ):
        assert needle in second, needle

    # the same files edited again (and one removed) between the next two turns
    (dirs.root / "USER.md").write_text("Name: Kim\nlikes-black-coffee\n")
    (dirs.root / "STEERING.md").write_text("Always answer in-prose-form.\n")
    (dirs.skills / "csv_cleanup.md").unlink()
    write_tool(dirs, "totals", "sums-every-row")
    assert (await roost.core.handle(msg("third", 3))).kind == "answer"
    third = system_prompt(roost, 2)
    assert "likes-black-coffee" in third and "likes-green-tea" not in third
    assert "in-prose-form" in third and "in-haiku-form" not in third
    assert "tidy-csv-exports" not in third
    assert "sums-every-row" in third and "adds-up-columns" not in third


async def test_tenant_tree_removed_between_turns_is_made_again(
    roost: Roost, settings: Settings
) -> None:
    dirs = TenantDirs.of(settings.home, "local")
    assert (await roost.core.handle(msg("first", 1))).kind == "answer"
    assert dirs.workspace.is_dir()
    shutil.rmtree(dirs.root)
    assert (await roost.core.handle(msg("second", 2))).kind == "answer"
    assert dirs.workspace.is_dir() and dirs.skills.is_dir()

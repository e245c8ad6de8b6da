"""Each block's `reads` names every snapshot field it renders from: the prompt source
keeps a block whose fields did not change, so a field left out would go stale."""

from __future__ import annotations

import dataclasses
from typing import Any

from bridge.core.config_sections import LoadoutSettings
from bridge.prompt.blocks import make_blocks
from bridge.prompt.render import render_block
from bridge.prompt.snapshot import ShownBullet, Snapshot, ToolLine
from bridge.prompt.views import SkillRow


def full() -> Snapshot:
    return Snapshot(
        tenant="alice",
        channel="web",
        base="base",
        operator_steering="op",
        tenant_steering="mine",
        profile=("- a: b",),
        memory=("- t (user): d",),
        memory_cap=2_000,
        vault_names=("TOKEN",),
        persona="p",
        persona_system="## Persona",
        audience="a group",
        skills=(SkillRow("s", "d", 0.5),),
        bullets=(ShownBullet("b-0001", "short"),),
        tools=(ToolLine("t", "d", None, 1.0),),
    )


OTHER: dict[type, Any] = {
    str: "other",
    int: 1_000,
    tuple: (),
}


def with_other(snap: Snapshot, name: str) -> Snapshot:
    value = getattr(snap, name)
    changes: dict[str, Any] = {name: OTHER.get(type(value), value)}
    return dataclasses.replace(snap, **changes)


def test_a_block_reads_nothing_it_does_not_name() -> None:
    snap = full()
    for block in make_blocks(LoadoutSettings()):
        assert block.reads is not None, block.name
        want = render_block(block, snap)
        for f in dataclasses.fields(Snapshot):
            if f.name in block.reads:
                continue
            changed = with_other(snap, f.name)
            assert render_block(block, changed) == want, (block.name, f.name)


def test_a_block_sees_each_field_it_names() -> None:
    snap = full()
    for block in make_blocks(LoadoutSettings()):
        assert block.reads is not None
        for name in block.reads:
            changed = with_other(snap, name)
            assert render_block(block, changed) != render_block(block, snap), (block.name, name)

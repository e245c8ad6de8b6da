"""The nine blocks: order, blocks 7-9 from their stores, shadow cohort, caps, byte identity."""

from __future__ import annotations

import hashlib
from typing import Any

from bridge.app.loadout import Loadout, build_loadout
from bridge.core.config import Settings
from bridge.memory.store import Provenance
from bridge.prompt.views import FileSkills, StaticStyle, shadow_cohort
from bridge.types.tenant_dirs import TenantDirs
from forge import toolmeta
from forge.toolmeta import ToolMeta
from forge.usage import UsageStore
from tests.conftest import Clock

DAY = 86_400


def odd_and_even_ids(bullet: str = "b2") -> tuple[str, str]:
    """A turn that shows shadow bullet `bullet`, and one that does not."""
    odd = next(f"m{i}" for i in range(100) if shadow_cohort(f"m{i}", bullet))
    even = next(f"m{i}" for i in range(100) if not shadow_cohort(f"m{i}", bullet))
    return odd, even


def make(settings: Settings, chats: Any, audit: Any, alice: TenantDirs) -> Loadout:
    def grades(dirs: TenantDirs) -> dict[str, float]:
        return {"csv-report": 1.5, "git-rebase": 0.3, "dead-skill": 0.0} if dirs == alice else {}

    def bullets(dirs: TenantDirs) -> list[tuple[str, str, str]]:
        if dirs != alice:
            return []
        return [
            ("b1", "Lead with the command, then explain.", "live"),
            ("b2", "Double-check dates before answering.", "shadow"),
        ]

    return build_loadout(
        settings,
        chats,
        audit,
        skills=FileSkills(grades),
        style=StaticStyle(bullets),
    )


def seed_blocks_7_to_9(alice: TenantDirs, now: float) -> None:
    for name, desc in (
        ("csv-report", "summarise a CSV"),
        ("git-rebase", "rebase safely"),
        ("dead-skill", "never shown"),
    ):
        (alice.skills / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: {desc}\n---\nbody"
        )
    # (description, created, last used) in days before now; usage as the forge records it
    tools = {
        "daily_log": ("append to your journal", 200, 2),
        "poke_api": ("call your private API", 120, None),
        "old_one": ("stale", 400, 95),
    }
    for name, (description, created, used) in tools.items():
        save_meta(alice, name, description, now - created * DAY)
        if used is not None:
            UsageStore(alice.tools).record(name, True, int((now - used * DAY) * 1000))


def save_meta(dirs: TenantDirs, name: str, description: str, created: float) -> None:
    """A saved tool's metadata exactly as the forge writes it (forge.toolmeta)."""
    meta = ToolMeta(name, description, {}, (), "0" * 64, int(created * 1000))
    (dirs.tools / f"me.{name}.json").write_bytes(toolmeta.dumps(meta))


def test_blocks_7_to_9_render_from_their_stores(
    settings: Settings, chats: Any, audit: Any, alice: TenantDirs, clock: Clock
) -> None:
    lo = make(settings, chats, audit, alice)
    seed_blocks_7_to_9(alice, clock.now)
    odd, even = odd_and_even_ids()
    r = lo.prompt.render(alice, "web", "c1", odd, clock.now)
    names = [b.name for b in r.blocks]
    assert names == ["base", "memory", "persona", "skills", "style", "tools"]
    text = {b.name: b.text for b in r.blocks}
    assert text["skills"].index("csv-report — summarise a CSV (grade 1.5)") < text["skills"].index(
        "git-rebase"
    )
    assert "dead-skill" not in text["skills"]
    assert "Lead with the command" in text["style"] and "Double-check dates" in text["style"]
    tools = text["tools"].splitlines()
    assert tools[1] == "- `me.daily_log` — append to your journal"
    assert "- `me.old_one` — stale (unused 95d)" in tools
    assert "- `me.poke_api` — call your private API (unused 120d)" in tools
    even_text = lo.prompt.render(alice, "web", "c1", even, clock.now).text
    assert "Lead with the command" in even_text and "Double-check dates" not in even_text
    assert hashlib.sha256(f"{odd}:b2".encode()).digest()[0] % 2 == 1
    assert hashlib.sha256(f"{even}:b2".encode()).digest()[0] % 2 == 0


def test_tools_block_shows_at_most_fifteen(
    settings: Settings, chats: Any, audit: Any, alice: TenantDirs, clock: Clock
) -> None:
    lo = make(settings, chats, audit, alice)
    for i in range(20):
        save_meta(alice, f"t{i:02d}", f"tool {i}", clock.now - i * 3600)
    text = lo.prompt.render(alice, "web", "c1", "m", clock.now).text
    assert text.count("- `me.t") == 15 and "(and 5 more; /tools lists them all)" in text
    assert "me.t00" in text and "me.t19" not in text


async def test_order_is_stable_first_and_prompt_byte_identical(
    lo: Loadout, alice: TenantDirs, clock: Clock, chats: Any
) -> None:
    alice.user_md.write_text("- name: Alice\n")
    (alice.vault / "API_KEY").write_text("value-1234")
    await lo.chats.set("alice", "web", "c1", "audience", "my students")  # type: ignore[union-attr]
    prov = Provenance("person", "web", "c1", "m")
    lo.memory.store.save(alice, "x", "user", "y", "z", prov, clock.now)
    same_cohort = [f"m{i}" for i in range(40) if shadow_cohort(f"m{i}", "b2")][:2]
    a = lo.prompt.render(alice, "web", "c1", same_cohort[0], clock.now)
    assert [b.name for b in a.blocks] == [
        "base",
        "profile",
        "memory",
        "vault",
        "persona",
        "audience",
    ]
    clock.advance(3600)
    b = lo.prompt.render(alice, "web", "c1", same_cohort[1], clock.now)
    assert a.text == b.text and b is a  # nothing changed: same object, no re-render
    other_cohort = next(f"m{i}" for i in range(40) if not shadow_cohort(f"m{i}", "b2"))
    c = lo.prompt.render(alice, "web", "c1", other_cohort, clock.now)
    assert c.text == a.text  # no shadow bullets: both cohorts get the same bytes


def test_every_block_announces_a_cut(
    settings: Settings, chats: Any, audit: Any, alice: TenantDirs
) -> None:
    small = settings.model_copy(
        update={"loadout": settings.loadout.model_copy(update={"profile_chars": 100})}
    )
    lo = build_loadout(small, chats, audit)
    alice.user_md.write_text("\n".join(f"- fact{i}: {'x' * 40}" for i in range(20)) + "\n")
    r = lo.prompt.render(alice, "web", None, "m", 0.0)
    block = next(b for b in r.blocks if b.name == "profile")
    assert block.cut and len(block.text) <= block.budget
    assert "[profile: cut to fit 300 characters;" in block.text


def test_memory_block_shows_usage(lo: Loadout, alice: TenantDirs, clock: Clock) -> None:
    prov = Provenance("person", "web", "c1", "m")
    lo.memory.store.save(alice, "editor", "user", "uses helix", "hx", prov, clock.now)
    text = lo.prompt.render(alice, "web", "c1", "m", clock.now).text
    line = "- editor (user): uses helix"
    assert f"## Memory [{round(100 * len(line) / 2200)}% — {len(line)}/2,200]" in text
    assert line in text


def test_each_shadow_bullet_has_its_own_cohort() -> None:
    turns = [f"m{i}" for i in range(400)]
    a = [shadow_cohort(t, "b-0001") for t in turns]
    b = [shadow_cohort(t, "b-0002") for t in turns]
    assert 150 < sum(a) < 250 and 150 < sum(b) < 250  # about half each
    both = sum(x and y for x, y in zip(a, b, strict=True))
    assert 60 < both < 140  # independent: about a quarter, not a half

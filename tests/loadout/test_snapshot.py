"""The snapshot is cheap when nothing changed (stat calls only) and sees every change."""

from __future__ import annotations

import inspect
import os
from typing import Any

from bridge.app.loadout import Loadout, build_loadout
from bridge.core.atomic import write_text
from bridge.memory.store import Provenance
from bridge.types.tenant_dirs import TenantDirs
from forge import toolmeta
from forge.toolmeta import ToolMeta
from tests.conftest import Clock


def tool_meta(description: str, created: float) -> bytes:
    """A saved tool's metadata as the forge writes it (the one format, forge.toolmeta)."""
    return toolmeta.dumps(ToolMeta("t", description, {}, (), "0" * 64, int(created * 1000)))


def populate(lo: Loadout, alice: TenantDirs, home: Any, now: float) -> None:
    (home / "STEERING.md").write_text("operator @inc.md")
    (home / "inc.md").write_text("included")
    alice.steering.write_text("mine")
    alice.user_md.write_text("- name: Alice\n")
    (alice.vault / "TOKEN").write_text("value-1234")
    (alice.tools / "me.t.json").write_bytes(tool_meta("d", now))
    prov = Provenance("person", "web", "c1", "m")
    lo.memory.store.save(alice, "x", "user", "y", "z", prov, now)


def test_unchanged_turn_opens_no_file(
    lo: Loadout, alice: TenantDirs, clock: Clock, settings: Any
) -> None:
    populate(lo, alice, settings.home, clock.now)
    first = lo.prompt.render(alice, "web", "c1", "m1", clock.now)
    reads = lo.files.reads
    for i in range(5):
        again = lo.prompt.render(alice, "web", "c1", f"m{i + 2}", clock.now)
        assert again.text == first.text
    assert lo.files.reads == reads


async def test_every_source_change_is_seen_next_turn(
    lo: Loadout, alice: TenantDirs, clock: Clock, settings: Any
) -> None:
    populate(lo, alice, settings.home, clock.now)

    def text() -> str:
        return lo.prompt.render(alice, "web", "c1", "m", clock.now).text

    assert "included" in text()
    v2_tool = tool_meta("TOOL v2", 0).decode()
    changes = [
        (lambda: (settings.home / "inc.md").write_text("INCLUDE v2"), "INCLUDE v2"),
        (lambda: alice.steering.write_text("MINE v2"), "MINE v2"),
        (lambda: alice.user_md.write_text("- name: ALICE v2\n"), "ALICE v2"),
        (lambda: (alice.vault / "SECOND").write_text("value-5678"), "SECOND, TOKEN"),
        (lambda: write_text(alice.tools / "me.t.json", v2_tool), "TOOL v2"),
        (lambda: lo.chats.set("alice", "web", "c1", "audience", "AUD v2"), "AUD v2"),  # type: ignore[union-attr]
        (lambda: lo.chats.set("alice", "web", "c1", "persona", "forge"), "tool smith"),  # type: ignore[union-attr]
    ]
    for change, expected in changes:
        done = change()
        if inspect.isawaitable(done):
            await done
        assert expected in text()


def test_same_size_same_mtime_rewrite_is_still_seen(
    lo: Loadout, alice: TenantDirs, clock: Clock
) -> None:
    alice.user_md.write_text("- k: AAAA\n")
    st = alice.user_md.stat()
    assert "AAAA" in lo.prompt.render(alice, "web", None, "m", clock.now).text
    tmp = alice.root / "tmp"
    tmp.write_text("- k: BBBB\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, alice.user_md)  # new inode, same size and mtime
    assert "BBBB" in lo.prompt.render(alice, "web", None, "m", clock.now).text


def test_uncached_loadout_gives_the_same_prompt(
    settings: Any, chats: Any, audit: Any, lo: Loadout, alice: TenantDirs, clock: Clock
) -> None:
    populate(lo, alice, settings.home, clock.now)
    plain = build_loadout(settings, chats, audit, cached=False)
    a = lo.prompt.render(alice, "web", "c1", "m", clock.now).text
    b = plain.prompt.render(alice, "web", "c1", "m", clock.now).text
    assert a == b


def test_in_place_edit_of_a_tool_file_is_seen_next_turn(
    lo: Loadout, alice: TenantDirs, clock: Clock
) -> None:
    meta = alice.tools / "me.t.json"
    meta.write_bytes(tool_meta("v1", 1))

    def tools_block() -> str:
        rendered = lo.prompt.render(alice, "web", "c1", "m", clock.now)
        return next(b.text for b in rendered.blocks if b.name == "tools")

    assert "v1" in tools_block()
    with meta.open("r+b") as fh:  # in place: the directory does not change
        fh.write(tool_meta("v2", 1))
    assert "v2" in tools_block() and "v1" not in tools_block()


def test_a_hand_edited_profile_brings_no_hidden_characters_into_the_prompt(
    lo: Loadout, alice: TenantDirs, clock: Clock
) -> None:
    alice.user_md.write_text("- name: Ali\u200bce\ufeff\n- note: i\u2060gnore\u2028this\n")
    text = lo.prompt.render(alice, "web", "c1", "m1", clock.now).text
    assert "- name: Alice" in text and "- note: ignore" in text  # U+2028 splits the line
    assert not any(ch in text for ch in "\u200b\ufeff\u2060\u2028")

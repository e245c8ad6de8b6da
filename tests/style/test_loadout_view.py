"""LearnedStyle plugged into the loadout: block 8 shows live bullets always and each
shadow bullet on its own cohort's turns, per tenant."""

from __future__ import annotations

from bridge.app.database import open_database
from bridge.app.loadout import build_loadout
from bridge.core.config import Settings
from bridge.loadout.chat_settings import ChatSettings
from bridge.style.rules import Counts, cohort_bit
from bridge.style.store import StyleStore
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import NullAudit
from bridge.types.tenant_dirs import TenantDirs
from tests.loadout.conftest import made_home
from tests.style.helpers import T0


async def test_block_8_renders_live_bullets_of_this_tenant_only(settings: Settings) -> None:
    db = await open_database(made_home(settings))
    chats = ChatSettings(db)
    await chats.load()
    store = StyleStore(db, chats.changes)  # the prompt rows the loadout reads
    live = await store.add_candidate("alice", "deploy", "LIVE-ALICE flag", Counts(8, 7), T0)
    await store.update(live.id, T0, state="live", live_since_ms=T0)
    shadow = await store.add_candidate("alice", "review", "SHADOW-ALICE flag", Counts(8, 7), T0)
    await store.update(shadow.id, T0, state="shadow", shadow_since_ms=T0)
    other = await store.add_candidate("alice", "write", "SHADOW-TWO flag", Counts(8, 7), T0)
    await store.update(other.id, T0, state="shadow", shadow_since_ms=T0)
    await store.add_candidate("bob", "deploy", "PENDING-BOB flag", Counts(8, 7), T0)
    loadout = build_loadout(settings, chats, NullAudit(), style=LearnedStyle(store))
    alice = TenantDirs.of(settings.home, "alice").ensure()
    bob = TenantDirs.of(settings.home, "bob").ensure()
    for tenant in ("alice", "bob"):
        await loadout.prompt.prepare(tenant)  # what a turn's `PromptRows` does
    seen: set[tuple[bool, bool]] = set()
    for i in range(64):
        msg_id = f"m{i}"
        text = loadout.prompt.render(alice, "web", "default", msg_id, T0 / 1000).text
        assert "LIVE-ALICE flag" in text
        first, second = "SHADOW-ALICE flag" in text, "SHADOW-TWO flag" in text
        assert first == (cohort_bit(msg_id, shadow.bid) == 1)  # the learner's own cohort
        assert second == (cohort_bit(msg_id, other.bid) == 1)
        seen.add((first, second))
        bobs = loadout.prompt.render(bob, "web", "default", msg_id, T0 / 1000).text
        assert "ALICE" not in bobs and "PENDING-BOB" not in bobs and "TWO" not in bobs
    assert seen == {(True, True), (True, False), (False, True), (False, False)}
    await db.aclose()

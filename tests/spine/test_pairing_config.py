"""A pairing lasts while its tenant is configured, and not past it (ops38 M5).

README: remove `[tenants.alice]` (a reload is enough) and the people paired to it are
strangers again. The binding rows stayed, so when a tenant of that name was configured
again (the name reused for someone else), the old account was let in at once, without a
new /pair, and `roost access list` kept listing it. Now they are removed at each start and
each reload, audited as `pairing.revoked` by "config".
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bridge.app.build import Roost, build
from bridge.app.live import reload_hooks
from bridge.core.config import Settings, load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

HIM = Inbound("telegram", "111", "111", "hello", "m1")


def configured(home: Path, *tenants: str) -> Settings:
    toml = "".join(f"[tenants.{t}]\ntelegram_ids = []\n" for t in tenants)
    (home.parent / "roost.toml").write_text(toml)
    return load_settings()


async def paired(roost: Roost) -> None:
    code = await roost.pairing.issue("alice")
    assert (await roost.pairing.redeem("telegram", "111", code)).outcome == "bound"
    assert roost.resolver.match(HIM) == "alice"


def revoked(audit: MemoryAudit) -> list[tuple[str | None, dict[str, object]]]:
    return [(tenant, d) for event, tenant, d in audit.events if event == "pairing.revoked"]


async def test_a_reload_without_the_tenant_removes_its_pairings_for_good(
    home: Path, clock: Clock
) -> None:
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        hooks = [h for h in reload_hooks(roost) if "tenants" in h.live]
        for hook in hooks:
            hook.apply(configured(home, "bob"))
        assert roost.resolver.match(HIM) is None  # at once
        for _ in range(1000):  # the rows go in the background: wait for it, not a time
            if not await roost.pairing.bindings():
                break
            await asyncio.sleep(0.01)
        assert await roost.pairing.bindings() == []
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
        for hook in hooks:  # a tenant of that name again: he must pair again
            hook.apply(configured(home, "alice", "bob"))
        assert roost.resolver.match(HIM) is None
        assert await roost.pairing.bound_tenant("telegram", "111") is None
    finally:
        await roost.aclose()


async def test_a_start_without_the_tenant_removes_its_pairings(home: Path, clock: Clock) -> None:
    first = await build(configured(home, "alice"), backend=ScriptedBackend(), clock=clock)
    try:
        await paired(first)
    finally:
        await first.aclose()
    audit = MemoryAudit()
    second = await build(
        configured(home, "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        assert await second.pairing.bindings() == []
        assert [d["by"] for _, d in revoked(audit)] == ["config"]
    finally:
        await second.aclose()
    third = await build(configured(home, "alice"), backend=ScriptedBackend(), clock=clock)
    try:
        assert third.resolver.match(HIM) is None
    finally:
        await third.aclose()

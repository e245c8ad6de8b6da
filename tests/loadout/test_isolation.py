"""Two tenants on one daemon never see each other's loadout: canaries in every block and command."""

from __future__ import annotations

import json
from typing import Any

from bridge.core.config import Settings
from bridge.loadout import vault
from bridge.types.tenant_dirs import TenantDirs
from tests.loadout.conftest import inbound

WHO = {"alice": "111", "bob": "222"}


def canaries(tenant: str) -> dict[str, str]:
    t = tenant.upper()
    return {
        "memory": f"CANARY_{t}_MEMORY",
        "remember": f"CANARY_{t}_REMEMBER",
        "profile": f"CANARY_{t}_PROFILE",
        "steering": f"CANARY_{t}_STEERING",
        "vault": f"CANARY_{t}_VAULT",
        "audience": f"CANARY_{t}_AUDIENCE",
        "skill": f"canary-{tenant}-skill",
        "tool": f"canary_{tenant}_tool",
    }


async def test_canaries_never_cross_tenants(two_tenant_settings: Settings, make_roost: Any) -> None:
    settings = two_tenant_settings
    steps = []
    for tenant in ("alice", "bob"):
        c = canaries(tenant)
        save = json.dumps(
            {
                "name": c["memory"],
                "type": "project",
                "description": c["memory"],
                "content": c["memory"],
            }
        )
        steps += [[("memory_save", save)], "saved"]
    roost = await make_roost(settings, *steps)

    async def say(tenant: str, text: str) -> str:
        final = await roost.core.handle(
            inbound(text, chat=f"chat-{tenant}", channel="telegram", identity=WHO[tenant])
        )
        return final.text

    for tenant in ("alice", "bob"):
        c = canaries(tenant)
        dirs = TenantDirs.of(settings.home, tenant).ensure()
        dirs.steering.write_text(f"{c['steering']} rules")
        vault.set_value(dirs, c["vault"], f"value-of-{tenant}-secret")
        (dirs.skills / f"{c['skill']}.md").write_text(f"---\ndescription: {c['skill']}\n---\n")
        (dirs.tools / f"me.{c['tool']}.json").write_text(json.dumps({"description": c["tool"]}))
        await say(tenant, f"remember {c['memory']}")  # the model saves it
        await say(tenant, f"/remember {c['remember']}")
        await say(tenant, f"/profile set pet {c['profile']}")
        await say(tenant, f"/audience {c['audience']}")
    await say("alice", "/persona forge")
    await say("bob", "/persona concise")

    outputs: dict[str, list[str]] = {"alice": [], "bob": []}
    for tenant in ("alice", "bob"):
        other = "bob" if tenant == "alice" else "alice"
        oc = canaries(other)
        before = len(roost.backend.requests)
        await say(tenant, "what do you know?")
        system = roost.backend.requests[before].system
        outputs[tenant].append(system)
        for cmd in ("/memory", "/memory stats", "/profile", "/persona", "/audience"):
            outputs[tenant].append(await say(tenant, cmd))
        # probes naming the other tenant's entries find nothing (the reply echoes only the probe)
        for probe in (f"/memory show {oc['memory']}", f"/memory rm {oc['remember']}"):
            reply = await say(tenant, probe)
            assert reply.startswith("No memory named"), reply
            outputs[tenant].append(reply.replace(oc["memory"], "").replace(oc["remember"], ""))
        own = canaries(tenant)
        for key in ("memory", "remember", "profile", "steering", "vault", "audience"):
            assert own[key] in system, (tenant, key)
        persona = "tool smith" if tenant == "alice" else "Persona: concise"
        assert persona in system
    for tenant in ("alice", "bob"):
        other = "bob" if tenant == "alice" else "alice"
        blob = "\n".join(outputs[tenant])
        for value in canaries(other).values():
            assert value not in blob, (tenant, value)
        assert f"value-of-{tenant}-secret" not in blob
        assert ("tool smith" in blob) == (tenant == "alice")
    # bob's undo never touches alice's memory
    assert "Undid" in await say("bob", "/memory undo")
    alice_root = TenantDirs.of(settings.home, "alice").root
    assert canaries("alice")["remember"] in (alice_root / "memory" / "MEMORY.md").read_text()
    audit_blob = json.dumps(roost.audit.events)
    for tenant in ("alice", "bob"):
        assert f"value-of-{tenant}-secret" not in audit_blob
        assert canaries(tenant)["profile"] not in audit_blob

"""The whole personal-tool path through the core, with the real sandbox.

The model writes a tool with forge_create, the person keeps it with
/tool save, the next turn offers it as `me__<name>`, the model calls it and
the sandbox runs it on a CSV in the tenant's workspace; /tools, /tool show
and /tool rm; block 9 lists it; the audit events carry no source.
"""

from __future__ import annotations

import json

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.core.sessions import SessionKey
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.consent import keep

SOURCE = '''
import csv

def run(path: str, column: str = "amount") -> dict:
    """Sum one column of a CSV file in the workspace."""
    total = 0.0
    rows = 0
    with open(path) as fh:
        for row in csv.DictReader(fh):
            total += float(row[column])
            rows += 1
    return {"rows": rows, "total": round(total, 2)}
'''
BROKEN = "import shutil\n\ndef run() -> str:\n    return shutil.which('sh')\n"


msg = web_msg


def script(roost: Roost, *steps: object) -> ScriptedBackend:
    backend = roost.backend  # the model passed in
    assert isinstance(backend, ScriptedBackend)
    backend.steps.extend(steps)
    return backend


async def test_write_save_call_show_remove(roost: Roost) -> None:
    core = roost.core
    backend = script(
        roost,
        [("forge_create", json.dumps({"name": "sum_csv", "description": "", "source": BROKEN}))],
        [
            (
                "forge_create",
                json.dumps(
                    {"name": "sum_csv", "description": "Sum a CSV column", "source": SOURCE}
                ),
            )
        ],
        "I wrote sum_csv. Keep it with /tool save sum_csv",
    )
    first = await core.handle(msg("write me a csv summing tool", 1))
    assert "/tool save sum_csv" in first.text
    results = [m.content for m in backend.requests[1].messages if m.role == "tool"]
    assert "not accepted" in results[0] and "shutil" in results[0] and "line 1" in results[0]
    results = [m.content for m in backend.requests[2].messages if m.role == "tool"]
    assert results[-1].startswith("Created sum_csv(path, column)")

    assert "Written in this chat, not saved yet" in (await core.handle(msg("/tools", 2))).text
    offer = await core.handle(msg("/tool save sum_csv", 3))
    assert not (roost.tenant_dirs("local").tools / "me.sum_csv.py").exists()  # not yet
    assert offer.actions and "sum_csv" in offer.actions[0].command
    saved = await core.handle(msg(offer.actions[0].command, 4))
    assert saved.text.startswith("Saved me.sum_csv(path: string, column: string?)")
    again = await core.handle(msg("/tool save sum_csv", 5))  # a saved draft is gone
    assert "There is no tool 'sum_csv' written in this chat" in again.text

    dirs = roost.tenant_dirs("local")
    (dirs.workspace / "spend.csv").write_text("item,amount\ntea,3.5\ncake,4.25\n")
    backend = script(roost, [("me__sum_csv", '{"path": "spend.csv"}')], "You spent 7.75.")
    answer = await core.handle(msg("how much did I spend?", 6))
    assert answer.text == "You spent 7.75."
    offered = backend.requests[-2]
    assert "me__sum_csv" in [t.name for t in offered.tools]
    assert "`me.sum_csv` — Sum a CSV column" in offered.system
    tool_result = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
    assert json.loads(tool_result) == {"rows": 2, "total": 7.75}

    script(roost, [("me__sum_csv", '{"path": "../../../../etc/passwd"}')], "Could not.")
    await core.handle(msg("sum /etc/passwd", 7))
    refused = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
    assert refused.startswith("error: me.sum_csv failed (") and "root:" not in refused

    shown = (await core.handle(msg("/tool show me.sum_csv", 8))).text
    assert "2 calls, 1 error," in shown and "def run(path: str" in shown  # not "1 errors"
    listed = (await core.handle(msg("/tools", 9))).text
    assert "me.sum_csv(path: string, column: string?)" in listed and "2 calls" in listed

    events = roost.audit.events
    called = [e[2] for e in events if e[0] == "tool.called"]
    assert [c["outcome"] for c in called] == ["ok", "error"]
    assert all(len(str(c["hash"])) == 12 for c in called)
    assert {"tool.created", "tool.saved"} <= {e[0] for e in events}
    assert not any("def run" in json.dumps(e[2]) or "spend.csv" in json.dumps(e[2]) for e in events)

    assert "Removed me.sum_csv" in (await core.handle(msg("/tool rm me.sum_csv", 10))).text
    backend = script(roost, "ok")
    await core.handle(msg("anything", 11))
    assert "me__sum_csv" not in [t.name for t in backend.requests[-1].tools]
    assert "/tools" in (await core.handle(msg("/tool show me.sum_csv", 12))).text


async def test_a_tampered_tool_does_not_run(roost: Roost) -> None:
    script(
        roost,
        [
            (
                "forge_create",
                json.dumps(
                    {
                        "name": "hello",
                        "description": "greet",
                        "source": 'def run(name: str) -> str:\n    """Greet."""\n'
                        '    return "hi " + name\n',
                    }
                ),
            )
        ],
        "made it",
    )
    await roost.core.handle(msg("make hello", 1))
    await keep(lambda t: roost.core.handle(msg(t, 2)), "hello")
    path = roost.tenant_dirs("local").tools / "me.hello.py"
    path.write_text(path.read_text().replace('"hi "', '"pwned "'))
    backend = script(roost, [("me__hello", '{"name": "x"}')], "done")
    await roost.core.handle(msg("greet x", 3))
    result = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
    assert "does not match the saved" in result and "pwned" not in result


async def test_tools_never_cross_tenants(settings: Settings, clock: Clock) -> None:
    roost = await build(
        settings.model_copy(update={"local_tenant": "alice"}),
        backend=ScriptedBackend(
            [
                (
                    "forge_create",
                    json.dumps(
                        {
                            "name": "secret_tool",
                            "description": "alice only",
                            "source": 'def run() -> int:\n    """One."""\n    return 1\n',
                        }
                    ),
                )
            ],
            "ok",
        ),
        audit=MemoryAudit(),
        clock=clock,
    )
    await roost.core.handle(msg("make it", 1))
    await keep(lambda t: roost.core.handle(msg(t, 2)), "secret_tool")
    await roost.aclose()
    bob = await build(
        settings.model_copy(update={"local_tenant": "bob"}),
        backend=ScriptedBackend("hi"),
        audit=MemoryAudit(),
        clock=clock,
    )
    await bob.core.handle(msg("hello", 1))
    request = bob.core._turns.backend.requests[-1]  # type: ignore[attr-defined]
    assert "secret_tool" not in request.system
    assert "me__secret_tool" not in [t.name for t in request.tools]
    assert "secret_tool" not in (await bob.core.handle(msg("/tools", 2))).text
    await bob.aclose()


SECRET_TOOL = '''
SECRETS = ["poke_api_key"]

def run(word: str) -> str:
    """Use the private key."""
    key = secret("poke_api_key")
    return word + ":" + str(key)
'''


async def test_declared_secret_reaches_the_tool_and_is_masked_in_replies(roost: Roost) -> None:
    from bridge.loadout.vault import set_value

    value = "pk_live_9f8e7d6c5b4a"
    set_value(roost.tenant_dirs("local"), "poke_api_key", value)
    script(
        roost,
        [
            (
                "forge_create",
                json.dumps({"name": "poke", "description": "poke", "source": SECRET_TOOL}),
            )
        ],
        "made",
    )
    await roost.core.handle(msg("make poke", 1))
    saved = await keep(lambda t: roost.core.handle(msg(t, 2)), "poke")
    assert "vault secrets: poke_api_key" in saved.text
    backend = script(roost, [("me__poke", '{"word": "x"}')], f"The key is {value}, done.")
    pieces: list[str] = []

    async def on_delta(p: str) -> None:
        pieces.append(p)

    final = await roost.core.handle(msg("poke it", 3), on_delta)
    result = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
    assert json.loads(result) == "x:[vault:poke_api_key]"  # a handle, never the value
    assert final.text == "The key is [vault:poke_api_key], done."
    assert value not in "".join(pieces) and "".join(pieces) == final.text
    assert (
        "poke_api_key" in backend.requests[-1].system and value not in backend.requests[-1].system
    )
    used = [e[2] for e in roost.audit.events if e[0] == "secret.used"]
    assert used == [{"name": "poke_api_key", "purpose": "me.poke"}]
    assert value not in json.dumps(roost.audit.events)
    history = (await roost.sessions.load(SessionKey("local", "web", "c1"), 0)).history
    assert value not in "".join(m.content for m in history)

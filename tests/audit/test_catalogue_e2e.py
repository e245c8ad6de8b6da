"""The catalogue is true: the events a real run emits are catalogued, and kept whole.

One scenario through the real core (memory, profile, persona, audience, a
tool written, saved, called and removed, a secret used, a skill graded, a
rejected answer, a failing backend, a refused stranger) records every event
with a sink that applies the writer's schema; every event must be in the
catalogue and the schema table, and no field dropped or unknown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from bridge.app.build import build
from bridge.app.channels_up import PLATFORMS
from bridge.audit.catalogue import EVENTS, SCHEDULER_EVENTS, SWEEP_EVENTS
from bridge.audit.schema import COMMANDS, SCHEMAS, keyed_namer, sanitize, schemas_for
from bridge.core.config import Settings
from bridge.loadout.vault import set_value
from bridge.types.backend import BackendError
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

TOOL = 'SECRETS = ["api"]\n\ndef run(n: int) -> int:\n    """Double."""\n    return 2 * n\n'
MEMORY = {"name": "tea", "type": "user", "description": "likes tea", "content": "Likes tea."}


class RedactingAudit:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, object]]] = []

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        self.events.append((event, sanitize(event, tenant, details, NAMER, KINDS)))

    async def emit_many(
        self, events: Sequence[tuple[str, str | None, Mapping[str, object]]]
    ) -> None:
        for event, tenant, details in events:
            await self.emit(event, tenant, details)


NAMER = keyed_namer(b"k" * 32)
KINDS = schemas_for(PLATFORMS)  # the channels the daemon's chain keeps


async def test_a_real_run_emits_only_catalogued_events(settings: Settings, clock: Clock) -> None:
    audit = RedactingAudit()
    backend = ScriptedBackend(
        [("memory_save", json.dumps(MEMORY))],
        "Saved. Using the tea_ritual skill: brew at 80 degrees.",
        "Sorry, hotter then.",
        [("forge_create", json.dumps({"name": "double", "description": "x2", "source": TOOL}))],
        "made",
        [("me__double", '{"n": 2}')],
        "4",
        BackendError("rate_limited", "busy"),
        "fine",
    )
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    dirs = roost.tenant_dirs("local")
    (dirs.skills / "tea_ritual.md").write_text("---\ndescription: brew tea well\n---\nsteps\n")
    set_value(dirs, "api", "value-0123456789")
    n = 0

    async def say(text: str, identity: str = "local", channel: str = "web") -> None:
        nonlocal n
        n += 1
        await roost.core.handle(Inbound(channel, identity, "c", text, f"{n:032x}"))

    for text in (
        "remember that I like tea",
        "no, that's wrong, brew it hotter",
        "/remember I live in Graz",
        "/memory rm tea",
        "/memory undo",
        "/profile set city Graz",
        "/profile rm city",
        "/persona forge",
        "/audience my family",
        "/audience clear",
        "/model default",
        "write a doubling tool",
        "/tool save double",
        "/tool save double yes",
        "double 2",
        "/tool rm me.double",
        "/nosuchcommand",
        "/remind in 20m stretch",
        "this one fails",
        "and this works",
        "/export",
    ):
        await say(text)
    (job,) = await roost.schedule.jobs.list_jobs("local")
    await say(f"/job pause {job.id}")
    await say("hello", identity="424242", channel="telegram")
    await roost.aclose()

    seen = {event for event, _ in audit.events}
    expected = (
        set(EVENTS)
        - SWEEP_EVENTS
        - SCHEDULER_EVENTS
        - {
            "access.flood",
            "pairing.issued",
            "pairing.used",
            "pairing.failed",
            "pairing.revoked",  # tests/telegram/test_unpair.py, tests/spine/test_access_cli.py
            "audit.repaired",
            "memory.refused",
            "secret.stored",
            "secret.removed",
            "tool.http",  # needs an HTTPS server: tests/personal_tools/test_net_audit.py
            "mcp.called",  # needs an attached MCP server: tests/mcp/test_client_e2e.py
            "budget.reached",  # needs a budget: tests/models/test_budgets.py
            "session.summarised",  # needs a long session: tests/convo/test_summaries.py
            "data.forgotten",  # `roost forget`: tests/spine/test_export.py
            # skill-forge: tests/skills/test_forge_web.py, tests/skills/test_forge_telegram.py
            "skill.proposed",
            "skill.saved",
            "skill.removed",
            "skill.restored",
            "correction.offered",  # corrections: tests/corrections/test_web_e2e.py
            "correction.kept",
            "correction.replaced",
            "memory.consolidated",  # tests/corrections/test_consolidation_e2e.py
            "outcome.judged",  # needs the judge on: tests/grading/test_judge_flow.py
            # need the fake Bot API and audio servers: tests/voice/test_voice_e2e.py
            "voice.transcribed",
            "voice.spoken",
            "voice.changed",
            # recall: tests/recall/test_daemon_e2e.py, tests/recall/test_import_cli.py,
            # tests/recall/test_supersede.py
            "recall.searched",
            "history.imported",
            "memory.superseded",
        }
    )
    assert expected <= seen, sorted(expected - seen)
    for event, details in audit.events:
        assert event in EVENTS, event
        assert event in SCHEMAS, event
        assert "_dropped" not in details and "_unknown" not in details, (event, details)
        assert set(details) <= set(EVENTS[event]), (
            event,
            sorted(set(details) - set(EVENTS[event])),
        )


async def test_every_command_roost_defines_is_kept_by_name(
    settings: Settings, clock: Clock
) -> None:
    """`command.run` keeps roost's own command names; any other `/word` is hashed."""
    roost = await build(settings, backend=ScriptedBackend(), audit=RedactingAudit(), clock=clock)
    try:
        names = {c.name for c in roost.core.commands}
    finally:
        await roost.aclose()
    assert names and names <= COMMANDS, sorted(names - COMMANDS)

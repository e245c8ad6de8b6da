"""A chat holds a bounded number of drafts, a turn offers a bounded number, and the
person can drop them (`/tool drop NAME`, `/tool drop all`)."""

from __future__ import annotations

import json

from bridge.app.build import Roost
from forge.library import sha256_text
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.masking import m

MAX_DRAFTS = 16  # bridge.personal_tools.drafts.MAX_DRAFTS: live drafts per chat
OFFERED_DRAFTS = 16  # bridge.personal_tools.source.OFFERED_DRAFTS: offered per turn


def source(n: int) -> str:
    return f'def run() -> int:\n    """Number {n}."""\n    return {n}\n'


def create(n: int) -> tuple[str, str]:
    return ("forge_create", json.dumps({"name": f"n{n}", "description": "", "source": source(n)}))


def backend_of(roost: Roost, *steps: object) -> ScriptedBackend:
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps.extend(steps)
    return backend


def drafts_offered(backend: ScriptedBackend, request: int = -1) -> list[str]:
    return [t.name for t in backend.requests[request].tools if t.name.startswith("draft__")]


def results(backend: ScriptedBackend, request: int = -1) -> list[str]:
    return [x.content for x in backend.requests[request].messages if x.role == "tool"]


async def test_creates_past_the_cap_are_refused_and_drafts_can_be_dropped(roost: Roost) -> None:
    extra = 4
    backend = backend_of(roost, [create(n) for n in range(MAX_DRAFTS + extra)], "made")
    answer = await roost.core.handle(web_msg("write many", 1))
    out = results(backend)
    assert sum(r.startswith("Created") for r in out) == MAX_DRAFTS
    refused = [r for r in out if not r.startswith("Created")]
    assert len(refused) == extra
    assert all("/tool drop" in r and "/tool save" in r for r in refused)
    assert answer.text.count("/tool drop all") == 1  # the person is told, once
    assert len(drafts_offered(backend)) == MAX_DRAFTS

    listing = (await roost.core.handle(web_msg("/tools", 2))).text
    assert "n0 v1" in listing and f"n{MAX_DRAFTS}" not in listing

    backend.steps.append("ok")
    await roost.core.handle(web_msg("hello", 3))
    assert len(drafts_offered(backend)) == MAX_DRAFTS  # the next turn: as many, no more

    dropped = (await roost.core.handle(web_msg("/tool drop n3", 4))).text
    assert dropped.startswith("Dropped the draft n3")
    missing = (await roost.core.handle(web_msg("/tool drop n3", 5))).text
    assert missing.startswith("There is no draft 'n3'")
    backend.steps.append([create(MAX_DRAFTS)])  # room for one more now
    backend.steps.append("ok")
    await roost.core.handle(web_msg("one more", 6))
    assert results(backend)[-1].startswith("Created")
    assert "draft__n3" not in drafts_offered(backend)
    assert f"draft__n{MAX_DRAFTS}" in drafts_offered(backend)

    everything = (await roost.core.handle(web_msg("/tool drop all", 7))).text
    assert everything.startswith(f"Dropped {MAX_DRAFTS} drafts")
    backend.steps.append("ok")
    await roost.core.handle(web_msg("hello", 8))
    assert drafts_offered(backend) == []
    assert "not saved yet" not in (await roost.core.handle(web_msg("/tools", 9))).text


async def test_a_rewrite_of_a_draft_is_no_new_draft(roost: Roost) -> None:
    """At the cap, rewriting one of the chat's drafts is still allowed."""
    rewrite = ("forge_create", json.dumps({"name": "n0", "description": "", "source": source(99)}))
    backend = backend_of(roost, [create(n) for n in range(MAX_DRAFTS)], [rewrite], "made")
    await roost.core.handle(web_msg("write many", 1))
    assert results(backend)[-1].startswith("Created n0")


async def test_a_chat_with_more_drafts_than_offered_is_offered_the_newest(
    roost: Roost, clock: Clock
) -> None:
    """Drafts written before the cap existed: a turn offers the newest few, no more."""
    many = OFFERED_DRAFTS + 10
    for n in range(many):  # as an older roost wrote them: one second apart, all live
        text = m(source(n))
        await roost.database.execute(
            "INSERT INTO tool_drafts (tenant, channel, chat, name, version, sha256,"
            " description, source, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("local", "web", "c1", f"n{n}", 1, sha256_text(text), "", text,
             int((clock() - many + n) * 1000)),
        )  # fmt: skip
    backend = backend_of(roost, "ok")
    await roost.core.handle(web_msg("hello", 1))
    offered = drafts_offered(backend)
    assert offered == sorted(f"draft__n{n}" for n in range(many - OFFERED_DRAFTS, many))
    listing = (await roost.core.handle(web_msg("/tools", 2))).text
    assert "older drafts (/tool drop all" in listing

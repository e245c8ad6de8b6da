"""Facts stay true and the right notes reach the prompt, through the real core.

A save about a topic that exists supersedes it (the old version in its
history, with provenance; `/memory show NAME --history`); a topic unused for
`archive_after_days` leaves the index and comes back when read; the topics
that match the newest message go, scored, into the note just before it while
the system prompt stays byte-identical; `roost prompt --message` shows the
scores.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from bridge.app.build import build
from bridge.cli.loadout import print_prompt
from bridge.core.config import Settings
from bridge.memory.files import INDEX_NAME
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, ScriptedBackend, web_msg

DAY = 86_400.0


def save(name: str, description: str, content: str) -> tuple[str, str]:
    return (
        "memory_save",
        json.dumps({"name": name, "type": "user", "description": description, "content": content}),
    )


async def test_a_new_fact_supersedes_the_old_and_history_keeps_it(
    settings: Settings, clock: Clock
) -> None:
    audit = MemoryAudit()
    backend = ScriptedBackend(
        [save("home town", "lives in Leipzig", "Lives in Leipzig since 2019.")],
        "ok",
        [save("home town", "lives in Hamburg", "Moved to Hamburg in May 2027.")],
        "ok",
    )
    roost = await build(settings, backend=backend, audit=audit, clock=clock)
    try:
        await roost.core.handle(web_msg("I live in Leipzig", 1), None)
        clock.now += DAY
        await roost.core.handle(web_msg("I moved to Hamburg", 2), None)
        dirs = roost.tenant_dirs("local")
        index = (dirs.memory / INDEX_NAME).read_text()
        assert "lives in Hamburg" in index and "Leipzig" not in index
        shown = await roost.core.handle(web_msg("/memory show home town --history", 3), None)
        assert "Moved to Hamburg" in shown.text
        assert "Earlier versions (1" in shown.text
        assert "Lives in Leipzig since 2019." in shown.text and "message m1" in shown.text
        plain = await roost.core.handle(web_msg("/memory show home town", 4), None)
        assert "Leipzig" not in plain.text
        superseded = [d for e, _, d in audit.events if e == "memory.superseded"]
        assert len(superseded) == 1 and superseded[0]["old_hash"] != superseded[0]["hash"]
        assert "Leipzig" not in json.dumps(superseded)
    finally:
        await roost.aclose()


async def test_unused_topics_leave_the_index_and_come_back_when_read(
    home: Path, clock: Clock
) -> None:
    settings = Settings(home=home, memory={"archive_after_days": 90, "inject_chars": 0})
    backend = ScriptedBackend(
        [save("sailing", "sails a dinghy", "Sails a Laser dinghy on the Alster.")],
        "ok",
        [save("tea", "drinks green tea", "Green tea, no sugar.")],
        "ok",
        [("memory_read", json.dumps({"name": "sailing"}))],
        "ok",
    )
    roost = await build(settings, backend=backend, clock=clock)
    try:
        dirs = roost.tenant_dirs("local")
        await roost.core.handle(web_msg("I sail", 1), None)
        clock.now += 100 * DAY
        await roost.core.handle(web_msg("I like green tea", 2), None)  # a save rewrites the index
        index = (dirs.memory / INDEX_NAME).read_text()
        assert "sails a dinghy" not in index and "1 archived topics" in index
        listed = await roost.core.handle(web_msg("/memory list", 3), None)
        assert "sailing" not in listed.text and "1 archived" in listed.text
        every = await roost.core.handle(web_msg("/memory list --all", 4), None)
        assert "sailing" in every.text
        await roost.core.handle(web_msg("what about my sailing?", 5), None)  # memory_read
        assert "sails a dinghy" in (dirs.memory / INDEX_NAME).read_text()
        assert (dirs.memory / "user_sailing.md").exists()  # nothing was deleted
    finally:
        await roost.aclose()


async def test_matching_topics_go_before_the_newest_message_only(
    settings: Settings, clock: Clock
) -> None:
    backend = ScriptedBackend(
        [
            save(
                "violin",
                "Lena's violin lessons",
                "Lena has violin lessons with Ms Okonkwo on Tuesdays.",
            )
        ],
        "ok",
        [save("diet", "vegetarian", "Vegetarian; no mushrooms.")],
        "ok",
        "Tuesday.",
        "Fine.",
    )
    roost = await build(settings, backend=backend, clock=clock)
    try:
        await roost.core.handle(web_msg("remember the violin", 1), None)
        await roost.core.handle(web_msg("remember my diet", 2), None)
        await roost.core.handle(web_msg("When is Lena's next violin lesson?", 3), None)
        await roost.core.handle(web_msg("How is the weather?", 4), None)
        asked, other = backend.requests[-2], backend.requests[-1]
        assert asked.system == other.system  # the stable prefix did not move
        note = asked.messages[-2].content
        assert asked.messages[-1].content == "When is Lena's next violin lesson?"
        assert "Ms Okonkwo on Tuesdays" in note and "(match " in note
        assert "mushrooms" not in note
        assert "Ms Okonkwo" not in other.messages[-2].content  # nothing matched: Now only
        stored = [m.content for m in backend.requests[-1].messages[:-2]]
        assert not any("From memory" in str(c) for c in stored)  # never stored in the session
    finally:
        await roost.aclose()


async def test_roost_prompt_message_shows_the_scores(settings: Settings, clock: Clock) -> None:
    backend = ScriptedBackend(
        [save("violin", "Lena's violin lessons", "Lessons with Ms Okonkwo on Tuesdays.")], "ok"
    )
    roost = await build(settings, backend=backend, clock=clock)
    try:
        await roost.core.handle(web_msg("remember", 1), None)
    finally:
        await roost.aclose()
    out = io.StringIO()
    await print_prompt(settings, "local", "web", None, "x", False, out, clock.now, "violin lesson?")
    text = out.getvalue()
    assert "== memory notes for this message (floor 0.30" in text
    assert "violin  [injected]  words: violin, lesson" in text

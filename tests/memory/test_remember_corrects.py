"""`/remember <topic>: <text>` corrects a topic: the prompt holds only the new fact.

A newcomer corrected the assistant's `coffee` memory with `/remember coffee:
prefers tea now` and got a second, contradicting topic; the prompt then
carried both, the stale one first (s33 N1). Now naming an existing topic
before a colon replaces it, and its old version, with where it came from,
is in `/memory show coffee --history`. Through the real core, as a chat sends.
"""

from __future__ import annotations

import io
import json

from bridge.cli.loadout import print_prompt
from bridge.core.config import Settings
from bridge.memory.files import INDEX_NAME
from tests.conftest import Clock, ScriptedBackend, web_msg

DAY = 86_400.0


def _save(name: str, type_: str, description: str, content: str) -> list[tuple[str, str]]:
    args = {"name": name, "type": type_, "description": description, "content": content}
    return [("memory_save", json.dumps(args))]


async def test_remember_topic_colon_replaces_the_topic(settings: Settings, clock: Clock) -> None:
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    backend = ScriptedBackend(
        _save("coffee", "user", "coffee preference", "Likes espresso."), "noted", "tea it is"
    )
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:

        async def say(text: str, n: int) -> str:
            return (await roost.core.handle(web_msg(text, n), None)).text

        await say("I like espresso", 1)
        clock.now += DAY
        reply = await say("/remember Coffee: prefers tea now", 2)
        assert reply.startswith("Updated 'coffee' [")
        assert "the earlier one is in its history (/memory show coffee --history)" in reply

        listing = await say("/memory list", 3)
        assert "1 topic:" in listing and "- coffee (user): prefers tea now" in listing
        index = (roost.tenant_dirs("local").memory / INDEX_NAME).read_text()
        assert "prefers tea now" in index and "espresso" not in index and "coffee pref" not in index

        await say("what coffee do I like", 4)
        request = backend.requests[-1]
        assert "- coffee (user): prefers tea now" in request.system
        assert "espresso" not in request.system.lower() and "coffee pref" not in request.system
        last_answer = max(i for i, m in enumerate(request.messages) if m.role == "assistant")
        this_turn = "\n".join(m.content for m in request.messages[last_answer + 1 :])
        assert "[From memory, the notes that match this message:\n## coffee" in this_turn
        assert "prefers tea now" in this_turn and "espresso" not in this_turn.lower()

        out = io.StringIO()  # `roost prompt --tenant local --message "what coffee do I like"`
        await print_prompt(
            settings, "local", "web", "c1", "p1", False, out, clock.now, "what coffee do I like"
        )
        shown_prompt = out.getvalue()
        assert "coffee  [injected]" in shown_prompt and "prefers tea now" in shown_prompt
        assert "espresso" not in shown_prompt.lower() and "coffee pref" not in shown_prompt

        shown = await say("/memory show coffee --history", 5)
        assert shown.startswith("coffee (user): prefers tea now\nsaved by you on web, chat c1")
        assert "Earlier versions (1, newest first):" in shown
        assert "saved by the assistant on web, chat c1, message m1" in shown
        assert "coffee preference\nLikes espresso." in shown

        helped = await say("/help remember", 8)
        assert "/remember <topic>: <new text>" in helped and "replaces what it holds" in helped
        assert "Undid" in await say("/memory undo", 6)
        assert "- coffee (user): coffee preference" in await say("/memory list", 7)
    finally:
        await roost.aclose()


async def test_a_colon_without_such_a_topic_makes_that_topic(
    settings: Settings, clock: Clock
) -> None:
    """`/remember coffee: likes flat white` made a topic 'coffee likes flat white', so the
    next `/remember coffee: prefers tea now` made a second, contradicting one and
    `/memory show coffee` knew no 'coffee' (newcomer37 F2)."""
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    roost = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    try:

        async def say(text: str, n: int) -> str:
            return (await roost.core.handle(web_msg(text, n), None)).text

        assert "Remembered as 'coffee'" in await say("/remember coffee: likes flat white", 1)
        replaced = await say("/remember coffee: prefers tea now", 2)
        assert replaced.startswith("Updated 'coffee'")
        assert (await say("/memory show coffee", 3)).startswith("coffee (user): prefers tea now")
        again = await say("/remember Coffee: prefers tea now", 4)
        assert "already says that" in again
        # a colon that is not a topic's name: named after the first words, as before
        made = await say("/remember the meeting is at 10:30 on Monday", 5)
        assert "Remembered as 'the meeting is at 10 30'" in made
        made = await say("/remember see https://example.com/menu for lunch", 6)
        assert "Remembered as 'see https example com menu for'" in made
        made = await say("/remember what my sister said last week: call more often", 7)
        assert "Remembered as 'what my sister said last week'" in made
        listing = await say("/memory list", 8)
        assert "4 topics" in listing and "- coffee (user): prefers tea now" in listing
    finally:
        await roost.aclose()


async def test_a_plain_fact_on_a_known_subject_replaces_the_topic(
    settings: Settings, clock: Clock
) -> None:
    """The subject match the store already has (`memory.facts`) holds for `/remember` too."""
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    backend = ScriptedBackend(
        _save("home town", "user", "lives in Leipzig", "Lives in Leipzig since 2019."), "ok", "ok"
    )
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:

        async def say(text: str, n: int) -> str:
            return (await roost.core.handle(web_msg(text, n), None)).text

        await say("I live in Leipzig", 1)
        reply = await say("/remember I moved to Hamburg in May", 2)
        assert "Remembered as 'I moved to Hamburg in May'" in reply
        assert "it replaces 'home town'" in reply
        await say("where do I live", 3)
        request = backend.requests[-1]
        assert "Hamburg" in request.system and "Leipzig" not in request.system
        last_answer = max(i for i, m in enumerate(request.messages) if m.role == "assistant")
        this_turn = "\n".join(m.content for m in request.messages[last_answer + 1 :])
        assert "Leipzig" not in this_turn
        shown = await say("/memory show I moved to Hamburg in May --history", 4)
        assert "Earlier versions (1" in shown and "Lives in Leipzig since 2019." in shown
    finally:
        await roost.aclose()


async def test_the_same_text_twice_is_kept_once(settings: Settings, clock: Clock) -> None:
    """A second `/remember` of a text memory already holds changes nothing: no second
    topic, no journal entry (one `/memory undo` empties the memory again)."""
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    audit = MemoryAudit()
    roost = await build(settings, backend=ScriptedBackend(), audit=audit, clock=clock)
    try:

        async def say(text: str, n: int) -> str:
            return (await roost.core.handle(web_msg(text, n), None)).text

        assert "Remembered as 'my dog is called Rex'" in await say(
            "/remember my dog is called Rex", 1
        )
        saved = sum(e[0] == "memory.saved" for e in audit.events)
        again = await say("/remember  my dog is  called Rex ", 2)
        assert again.startswith("Already remembered as 'my dog is called Rex' [")
        assert again.endswith("nothing changed.")
        assert sum(e[0] == "memory.saved" for e in audit.events) == saved
        assert "1 topic:" in await say("/memory list", 3)
        assert "Undid" in await say("/memory undo", 4)
        assert "Memory is empty" in await say("/memory list", 5)
    finally:
        await roost.aclose()

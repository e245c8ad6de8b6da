"""The bot turns link previews off in each room it answers in, once.

Element asks the homeserver to fetch every URL of a message in an
unencrypted room unless the room's `org.matrix.room.preview_urls` state
says `{"disable": true}`: a URL the model chose (its query carrying what an
injected text steered it to) would be fetched with no click. Against the
real Synapse: in a room where the bot may set state (Element's DM preset,
`trusted_private_chat`), the state event is in the room, sent by the bot,
before its first answer, and only once however many messages follow (a
restart too: the room's state is the record); in a
room where it may not (`private_chat`: the invitee has power level 0), one
log line and the answers still come.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot

PREVIEWS = "org.matrix.room.preview_urls"


async def trusted_dm_with_bot(person: Person, bot: str) -> str:
    """A direct room as Element makes it: the invitee gets the creator's power level."""
    body = {"invite": [bot], "is_direct": True, "preset": "trusted_private_chat"}
    room = str((await person.call("POST", "/_matrix/client/v3/createRoom", body))["room_id"])
    person.timeline.setdefault(room, [])
    await person.wait(lambda: person.membership(room, bot) == "join", "the bot joined")
    return room


def answered(person: Person, room: str, bot: str, text: str) -> Callable[[], bool]:
    return lambda: person.texts(room, bot)[-1:] == [text]


def preview_events(person: Person, room: str) -> list[dict[str, Any]]:
    return [e for e in person.timeline.get(room, []) if e.get("type") == PREVIEWS]


async def test_previews_are_turned_off_once_before_the_first_answer(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    async with running(
        mx_settings(home, synapse, accounts), ScriptedBackend("one", "two", "three")
    ) as r:
        room = await trusted_dm_with_bot(alice, bot)
        for n, text in enumerate(("one", "two", "three"), 1):
            await alice.say(room, f"question {n}")
            await alice.wait(answered(alice, room, bot, text), f"answer {n}")
        await r.channel.idle()
    async with running(mx_settings(home, synapse, accounts), ScriptedBackend("four")) as r:
        await alice.say(room, "after a restart")  # the room's state says it is done
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == ["four"], "answer 4")
        await r.channel.idle()
    state = await alice.call("GET", f"/_matrix/client/v3/rooms/{room}/state/{PREVIEWS}/")
    assert state == {"disable": True}
    (event,) = preview_events(alice, room)  # sent once, for all four answers
    assert event["sender"] == bot and event["state_key"] == ""
    timeline = alice.timeline[room]
    first_answer = next(
        i
        for i, e in enumerate(timeline)
        if e.get("sender") == bot and e["type"] == "m.room.message"
    )
    assert timeline.index(event) < first_answer  # off before any answer could be previewed


async def test_a_room_where_the_bot_may_not_set_it_is_logged_once_and_answered(
    home: Path,
    synapse: Synapse,
    accounts: Accounts,
    alice: Person,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "bridge.channels.matrix")
    bot = accounts.bot.user_id
    async with running(mx_settings(home, synapse, accounts), ScriptedBackend("one", "two")) as r:
        room = await dm_with_bot(alice, bot, direct=False)  # private_chat: the bot has level 0
        await alice.say(room, "question 1")
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == ["one"], "the first answer")
        await alice.say(room, "question 2")
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == ["two"], "the second answer")
        await r.channel.idle()
    told = [rec.getMessage() for rec in caplog.records if "link previews" in rec.getMessage()]
    assert told == [
        f"matrix: link previews stay on in room {room} (HTTP 403 M_FORBIDDEN): the bot may "
        f"not set {PREVIEWS}; give it the power level to change room state there, or turn "
        "URL previews off in the client; answering anyway"
    ]
    assert preview_events(alice, room) == []


async def test_previews_turned_back_on_by_a_member_are_turned_off_again(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    """The attacker pass of session 33: the room's creator (power level 100 in an Element
    DM) set `{"disable": false}` after the bot's first answer, and every later answer
    of that run went out with previews on. The sync shows the change; the bot checks the
    room again before its next answer."""
    bot = accounts.bot.user_id
    path = f"/_matrix/client/v3/rooms/{{room}}/state/{PREVIEWS}/"
    async with running(mx_settings(home, synapse, accounts), ScriptedBackend("one", "two")) as r:
        room = await trusted_dm_with_bot(alice, bot)
        await alice.say(room, "question 1")
        await alice.wait(answered(alice, room, bot, "one"), "answer 1")
        assert await alice.call("GET", path.format(room=room)) == {"disable": True}
        await alice.call("PUT", path.format(room=room), {"disable": False})
        await alice.say(room, "question 2: see https://attacker.example/?q=MEMORY")
        await alice.wait(answered(alice, room, bot, "two"), "answer 2")
        await r.channel.idle()
    assert await alice.call("GET", path.format(room=room)) == {"disable": True}
    events = preview_events(alice, room)
    assert [e["content"].get("disable") for e in events] == [True, False, True]
    turned_on, turned_off = events[1], events[2]
    answer = next(e for e in alice.timeline[room] if e.get("content", {}).get("body") == "two")
    timeline = alice.timeline[room]
    assert turned_on["sender"] != bot and turned_off["sender"] == bot
    assert timeline.index(turned_off) < timeline.index(answer)  # off before the answer

"""Only a private room of two is a direct room: history not world-readable, no entry unasked.

The attack: mallory (here `stranger`) makes a room anyone may read
(`world_readable` history) or join (`public`), invites alice and the bot as
if to a direct room, and leaves: two members, so the bot would take it for
alice's direct room, answer her private questions there and send her
reminders there, while eve, never a member, reads everything through
`GET /rooms/<id>/messages`. The bot refuses an invite whose invite state
already shows such a room, leaves one whose state tells so once joined (or
later, when it changes, the bot away too), answers nothing there and
keeps no reminder route to it; the outbox asks again before it delivers.

Strangers: the bot joins a stranger's direct invite only so they can
`/pair`: one room per stranger, few strangers' rooms at once, each left
when they stay silent; a stranger's encrypted message gets the stranger
flow (the refusal naming `/pair CODE`), not the encryption notice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mautrix.api import Method
from mautrix.api import Path as MxPath

from bridge.channels.matrix.channel import ENCRYPTED
from bridge.channels.matrix.events import exposed, private, read
from bridge.schedule.outbox import DeliveryError, OutboxEntry
from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, Running, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse
from tests.matrix.test_chat import dm_with_bot

SECRET = "Your bank PIN note says 4711."
WORLD = {
    "type": "m.room.history_visibility",
    "state_key": "",
    "content": {"history_visibility": "world_readable"},
}


async def invite_as_direct(person: Person, room: str, user: str) -> None:
    """The invite `createRoom` sends with `is_direct`, sent by hand to an existing room."""
    path = f"/_matrix/client/v3/rooms/{room}/state/m.room.member/{user}"
    await person.call("PUT", path, {"membership": "invite", "is_direct": True})


async def read_from_outside(synapse: Synapse, room: str) -> list[dict[str, Any]]:
    """What eve, never a member, reads of the room (a world-readable room's history)."""
    eve = synapse.register(f"eve{time.monotonic_ns()}")
    person = Person(synapse.url, eve.user_id, eve.access_token)
    try:
        got = await person.call(
            "GET", f"/_matrix/client/v3/rooms/{room}/messages", params={"dir": "b", "limit": "100"}
        )
    finally:
        await person.close()
    return list(got["chunk"])


def said(events: list[dict[str, Any]], bot: str) -> list[str]:
    return [
        str(e["content"].get("body"))
        for e in events
        if e.get("type") == "m.room.message" and e.get("sender") == bot
    ]


async def test_a_public_world_readable_room_made_to_look_direct_is_refused(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, stranger: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    backend = ScriptedBackend(SECRET, SECRET)
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        body = {"preset": "public_chat", "invite": [who], "initial_state": [WORLD]}
        room = str((await stranger.call("POST", "/_matrix/client/v3/createRoom", body))["room_id"])
        await alice.join(room)
        await invite_as_direct(stranger, room, bot)
        await stranger.call("POST", f"/_matrix/client/v3/rooms/{room}/leave", {})
        await alice.say(room, "what did I note about my bank?")
        await alice.wait(lambda: alice.membership(room, bot) == "leave", "the invite refused")
        await r.channel.idle()
        direct = await r.channel.store.direct(who)
    outside = await read_from_outside(synapse, room)
    assert "what did I note about my bank?" in str(outside), "eve can read this room"
    assert said(outside, bot) == [] and alice.joins(room, bot) == 0
    assert backend.requests == [] and direct is None


async def test_an_invite_only_room_with_world_readable_history_is_left_unanswered(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    backend = ScriptedBackend(SECRET, SECRET)
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        # the invite state does not show the history's visibility: only the joined room does
        body = {"preset": "private_chat", "invite": [bot], "is_direct": True,
                "initial_state": [WORLD]}  # fmt: skip
        room = str((await alice.call("POST", "/_matrix/client/v3/createRoom", body))["room_id"])
        alice.timeline.setdefault(room, [])
        await alice.say(room, "what did I note about my bank?")
        await alice.wait(lambda: alice.membership(room, bot) == "leave", "the bot left")
        await alice.say(room, "hello?")
        await r.channel.idle()
        direct = await r.channel.store.direct(who)
    outside = await read_from_outside(synapse, room)
    assert "what did I note about my bank?" in str(outside)
    assert said(outside, bot) == [] and backend.requests == [] and direct is None


def entry(chat: str) -> OutboxEntry:
    now = int(time.time() * 1000)
    return OutboxEntry(7, "alice", "matrix", chat, "k", "Reminder: " + SECRET, "queued",
                       now, now, 0, "", None)  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "content"),
    [
        ("m.room.join_rules", {"join_rule": "public"}),
        ("m.room.history_visibility", {"history_visibility": "world_readable"}),
    ],
)
async def test_a_direct_room_that_opens_later_is_left_and_gets_no_reminders(
    home: Path,
    synapse: Synapse,
    accounts: Accounts,
    alice: Person,
    kind: str,
    content: dict[str, str],
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    backend = ScriptedBackend("first answer", SECRET, SECRET)
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        asked: list[str] = []
        access = r.channel.client.access

        async def counted(room_id: str) -> dict[str, str]:
            asked.append(room_id)
            return await access(room_id)

        r.channel.client.access = counted  # type: ignore[method-assign]
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "the first answer")
        await r.channel.idle()
        assert await r.channel.store.direct(who) == room
        assert asked == [], "the join's sync told the room's state: no request per message"
        await alice.call("PUT", f"/_matrix/client/v3/rooms/{room}/state/{kind}/", content)
        await alice.say(room, "what did I note about my bank?")
        await alice.wait(lambda: alice.membership(room, bot) == "leave", "the bot left")
        await r.channel.idle()
        direct = await r.channel.store.direct(who)
    await alice.sync_once(0)
    assert alice.texts(room, bot) == ["first answer"] and len(backend.requests) == 1
    assert direct is None, "no reminder or `roost send` goes to the opened room"


async def test_a_reminder_is_not_sent_to_a_room_that_opened_before_the_bot_noticed(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    async with running(mx_settings(home, synapse, accounts), ScriptedBackend("hi")) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["hi"], "the answer")
        await r.channel.idle()
        assert r.channel._loop is not None
        r.channel._loop.cancel()  # the bot has not synced since: it is still in the room
        await alice.call(
            "PUT",
            f"/_matrix/client/v3/rooms/{room}/state/m.room.history_visibility/",
            {"history_visibility": "world_readable"},
        )
        with pytest.raises(DeliveryError) as refused:
            await r.outbox(entry(who))
        direct = await r.channel.store.direct(who)
    await alice.sync_once(0)
    assert refused.value.permanent and direct is None
    assert alice.texts(room, bot) == ["hi"], "the reminder never reached the room"


async def test_a_room_opened_while_the_bot_was_away_is_left_at_the_restart(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.alice.user_id
    settings = mx_settings(home, synapse, accounts)
    async with running(settings, ScriptedBackend("first answer")) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "the first answer")
        await r.channel.idle()
    await alice.call(
        "PUT",
        f"/_matrix/client/v3/rooms/{room}/state/m.room.history_visibility/",
        {"history_visibility": "world_readable"},
    )
    await alice.say(room, "what did I note about my bank?")
    backend = ScriptedBackend(SECRET)
    async with running(settings, backend) as r:
        await alice.wait(lambda: alice.membership(room, bot) == "leave", "the bot left")
        await r.channel.idle()
        direct = await r.channel.store.direct(who)
    assert alice.texts(room, bot) == ["first answer"]
    assert backend.requests == [] and direct is None


async def joined_rooms(r: Running) -> list[str]:
    got = await r.channel.client.call(Method.GET, MxPath.v3.joined_rooms)
    return sorted(got["joined_rooms"])


async def test_a_strangers_invites_hold_one_room_and_strangers_few_rooms(
    home: Path, synapse: Synapse, accounts: Accounts, stranger: Person
) -> None:
    bot = accounts.bot.user_id
    eve_account = synapse.register(f"eve{time.monotonic_ns()}")
    eve = Person(synapse.url, eve_account.user_id, eve_account.access_token)
    try:
        async with running(mx_settings(home, synapse, accounts)) as r:
            r.channel.stranger_rooms = 1
            rooms = [await dm_with_bot(stranger, bot) for _ in range(5)]
            older = rooms[:-1]
            await stranger.wait(
                lambda: all(stranger.membership(room, bot) == "leave" for room in older),
                "the older rooms left",
            )
            # the one stranger's room allowed at once is taken: eve's invite is rejected
            other = await eve.create_room([bot])
            await eve.wait(lambda: eve.membership(other, bot) == "leave", "rejected")
            await r.channel.idle()
            joined = await joined_rooms(r)
    finally:
        await eve.close()
    assert joined == [rooms[-1]], "the newest of the stranger's rooms, nothing more"
    assert eve.joins(other, bot) == 0


async def test_a_strangers_room_is_left_when_they_stay_silent(
    home: Path, synapse: Synapse, accounts: Accounts, stranger: Person
) -> None:
    bot = accounts.bot.user_id
    async with running(mx_settings(home, synapse, accounts)) as r:
        r.channel.stranger_s = 1.0
        room = await dm_with_bot(stranger, bot)
        await stranger.wait(lambda: stranger.membership(room, bot) == "leave", "the bot left")
        joined = await joined_rooms(r)
    assert joined == [] and stranger.texts(room, bot) == []


async def test_a_strangers_encrypted_message_gets_the_stranger_flow_not_the_notice(
    home: Path, synapse: Synapse, accounts: Accounts, stranger: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.stranger.user_id
    ciphertext = {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnACgAkLmt6q",
                  "device_id": "RJYKSTBOIE", "sender_key": "IlRMeOPX2e0MurIy",
                  "session_id": "X3lUlvLELLYxeTx4"}  # fmt: skip
    backend = ScriptedBackend()
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        room = await dm_with_bot(stranger, bot, encrypted=True)
        await stranger.send(room, ciphertext, "m.room.encrypted")
        await stranger.wait(lambda: stranger.membership(room, bot) == "leave", "the bot left")
        await r.channel.idle()
        refused = r.events("access.refused")
    (refusal,) = stranger.texts(room, bot)
    assert refusal != ENCRYPTED and "/pair CODE" in refusal and who in refusal
    assert refused == [{"channel": "matrix", "identity": who, "suppressed": 0}]
    assert backend.requests == []


def test_the_rule_and_what_a_sync_tells_of_it() -> None:
    me = "@roost:example.org"

    def state(kind: str, key: str, value: str) -> dict[str, Any]:
        return {"type": kind, "state_key": "", "content": {key: value}, "event_id": "$s"}

    hv, jr = "m.room.history_visibility", "m.room.join_rules"
    told = [state(jr, "join_rule", "invite"), state(jr, "join_rule", "public")]
    room = {
        "state": {"events": [state(hv, "history_visibility", "shared")]},
        "timeline": {"events": told},
    }
    member = {
        "type": "m.room.member",
        "state_key": me,
        "sender": "@m:x.org",
        "content": {"membership": "invite", "is_direct": True},
    }
    invite_state = {"events": [state(jr, "join_rule", "public"), member]}
    rooms = {"join": {"!a:x.org": room}, "invite": {"!b:x.org": {"invite_state": invite_state}}}
    sync = {"next_batch": "t", "rooms": rooms}
    batch = read(sync, me)
    assert batch is not None
    assert batch.access == {"!a:x.org": {hv: "shared", jr: "public"}}, "the last one counts"
    (invite,) = batch.invites
    assert invite.direct and exposed(invite.access) and not exposed({hv: "shared"})
    for history in ("shared", "invited", "joined"):
        for rule in ("invite", "knock"):
            assert private({hv: history, jr: rule})
    for history, rule in [("world_readable", "invite"), ("shared", "public"),
                          ("shared", "restricted"), ("shared", "knock_restricted"),
                          ("shared", "private"), ("", "invite"), ("shared", "")]:  # fmt: skip
        assert not private({hv: history, jr: rule}) and exposed({hv: history, jr: rule})
    assert not private({hv: "shared"}), "half known is not private"

"""A direct room that grows past two people is left, and nothing more is answered there.

The attack: alice (a tenant) has a direct room with the bot, invites a
third person (mallory, here `stranger`), who joins; alice's next question
must not be answered into the room mallory reads. The bot learns the
room's members from the sync (its filter keeps `m.room.member`, so the
join comes with the room's summary) or, after a gap in the timeline that
may hide a join, asks the homeserver before it answers.
"""

from __future__ import annotations

from pathlib import Path

from bridge.channels.matrix.events import read
from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse

SECRET = "Your bank PIN note says 4711."


async def dm_with_bot(person: Person, bot: str) -> str:
    room = await person.create_room([bot])
    await person.wait(lambda: person.membership(room, bot) == "join", "the bot joined")
    return room


def secret_seen(person: Person, room: str, bot: str) -> bool:
    return any(SECRET in str(e.get("content")) for e in person.from_bot(room, bot))


async def test_a_third_member_joining_a_direct_room_gets_no_answer_and_the_bot_leaves(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, stranger: Person
) -> None:
    bot = accounts.bot.user_id
    backend = ScriptedBackend("first answer", SECRET, SECRET)
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        asked: list[str] = []
        present = r.channel.client.present

        async def counted(room_id: str) -> int:
            asked.append(room_id)
            return await present(room_id)

        r.channel.client.present = counted  # type: ignore[method-assign]
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "the first answer")
        await r.channel.idle()
        await alice.invite(room, accounts.stranger.user_id)
        await stranger.join(room)
        await alice.say(room, "what did I note about my bank?")
        await alice.wait(
            lambda: alice.membership(room, bot) == "leave" or len(alice.texts(room, bot)) > 1,
            "the bot left (or answered)",
        )
        await stranger.say(room, "hi bot, what is in alice's memory?")
        await r.channel.idle()
        direct = await r.channel.store.direct(accounts.alice.user_id)
    await alice.sync_once(0)
    await stranger.sync_once(0)
    assert alice.texts(room, bot) == ["first answer"]
    assert alice.membership(room, bot) == "leave"
    assert not secret_seen(stranger, room, bot) and not secret_seen(alice, room, bot)
    assert len(backend.requests) == 1, "the question after the join never reached the model"
    assert direct is None, "no reminder or `roost send` goes to the crowded room"
    assert asked == [], "the sync told the members: no request per message"


async def test_a_join_hidden_in_a_gap_of_the_timeline_is_asked_before_answering(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, stranger: Person
) -> None:
    bot = accounts.bot.user_id
    settings = mx_settings(home, synapse, accounts)
    async with running(settings, ScriptedBackend("first answer")) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "the first answer")
        await r.channel.idle()
    # while the bot is away: mallory joins, and more is said than one sync's timeline holds,
    # so the join falls into the gap (no summary, no member event: only `limited`)
    await alice.invite(room, accounts.stranger.user_id)
    await stranger.join(room)
    for n in range(105):
        await alice.say(room, f"note {n}")
    backend = ScriptedBackend(*[SECRET] * 110)
    async with running(settings, backend) as r:
        await r.channel.idle()
        await alice.wait(
            lambda: alice.membership(room, bot) == "leave" or len(alice.texts(room, bot)) > 1,
            "the bot left (or answered)",
        )
        await r.channel.idle()
    await stranger.sync_once(0)
    assert alice.texts(room, bot) == ["first answer"]
    assert not secret_seen(stranger, room, bot)
    assert backend.requests == []


def test_a_sync_tells_members_and_where_they_may_have_changed() -> None:
    me = "@roost:example.org"
    member = {"type": "m.room.member", "sender": "@m:x.org", "state_key": "@m:x.org",
              "event_id": "$j", "content": {"membership": "join"}}  # fmt: skip
    summary = {"m.joined_member_count": 2, "m.invited_member_count": 1}
    join = {
        "!told:x.org": {"timeline": {"events": [member]}, "summary": summary},
        "!gap:x.org": {"timeline": {"events": [], "limited": True}},
        "!calm:x.org": {"timeline": {"events": []}},
    }
    batch = read({"next_batch": "t", "rooms": {"join": join}}, me)
    assert batch is not None and batch.messages == []
    assert batch.members == {"!told:x.org": 3}, "an invited person counts"
    assert batch.changed == {"!told:x.org", "!gap:x.org"}

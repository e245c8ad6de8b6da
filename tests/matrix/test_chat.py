"""The Matrix channel against a real Synapse: the person is a plain client-server API client.

Each test drives the real path: the person's client sends to Synapse, the
bot's sync loop (the channel made by the real channel table) takes it, the
core answers (a scripted model), and the person reads the answer, and its
edits, back from Synapse.
"""

from __future__ import annotations

from pathlib import Path

from bridge.channels.matrix.channel import ENCRYPTED
from tests.conftest import ScriptedBackend
from tests.matrix.conftest import Accounts, mx_settings, running
from tests.matrix.person import Person
from tests.matrix.synapse_server import Synapse


async def dm_with_bot(person: Person, bot: str, **kw: bool) -> str:
    room = await person.create_room([bot], **kw)
    await person.wait(lambda: person.membership(room, bot) == "join", "the bot joined")
    return room


async def test_a_direct_message_is_answered_formatted_and_streamed_by_edits(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    answer = "**Hello** Alice, this answer arrives in pieces and is edited into place."
    async with running(mx_settings(home, synapse, accounts), ScriptedBackend(answer)) as r:
        room = await dm_with_bot(alice, bot, direct=False)  # a known person's room of two
        await alice.say(room, "hi")
        await alice.wait(lambda: alice.texts(room, bot)[-1:] == [answer.replace("**", "")])
        await r.channel.idle()
        direct = await r.channel.store.direct(accounts.alice.user_id)
        received = r.events("message.received")
    (shown,) = alice.answers(room, bot)
    assert shown["format"] == "org.matrix.custom.html"
    assert shown["formatted_body"].startswith("<strong>Hello</strong> Alice")
    assert alice.edits(room, bot) >= 1, "the first piece went out at once, then was edited"
    assert direct == room
    assert [e["channel"] for e in received] == ["matrix"]


async def test_in_a_group_only_mentions_are_answered_each_person_apart(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person, stranger: Person
) -> None:
    bot = accounts.bot.user_id
    group = await alice.create_room([bot, accounts.stranger.user_id], direct=False)
    await stranger.join(group)
    backend = ScriptedBackend("group answer")
    settings = mx_settings(home, synapse, accounts, matrix={"allowed_rooms": [group]})
    async with running(settings, backend) as r:
        await alice.wait(lambda: alice.membership(group, bot) == "join", "the bot joined")
        await alice.say(group, "just chatting among us")
        await alice.say(group, f"{bot}: what is up?", **{"m.mentions": {"user_ids": [bot]}})
        await stranger.say(group, f"hey {bot}")
        await alice.wait(lambda: "group answer" in alice.texts(group, bot), "the answer")
        await alice.wait(lambda: len(alice.texts(group, bot)) == 2, "and the refusal")
        await r.channel.idle()
    # each person is a lane of their own: the refusal may go out before the answer
    texts = alice.texts(group, bot)
    (refusal,) = [t for t in texts if t != "group answer"]
    assert texts.count("group answer") == 1 and "don't know" in refusal.lower()
    (request,) = backend.requests  # the chatter without a mention never reached the model
    assert "what is up?" in str(request) and bot not in str(request)
    assert [e["identity"] for e in r.events("access.refused")] == [accounts.stranger.user_id]


async def test_a_stranger_is_refused_once_then_silence_and_can_pair(
    home: Path, synapse: Synapse, accounts: Accounts, stranger: Person
) -> None:
    bot, who = accounts.bot.user_id, accounts.stranger.user_id
    backend = ScriptedBackend("Hi Bob, paired.")
    settings = mx_settings(home, synapse, accounts, tenants={"bob": {}})
    async with running(settings, backend) as r:
        group = await stranger.create_room([bot], direct=False)  # not allowed: rejected
        first = await dm_with_bot(stranger, bot)
        await stranger.say(first, "hello?")
        await stranger.wait(lambda: stranger.membership(first, bot) == "leave", "the bot left")
        second = await dm_with_bot(stranger, bot)
        await stranger.say(second, "hello again?")
        await stranger.wait(lambda: stranger.membership(second, bot) == "leave", "left again")
        await stranger.wait(lambda: stranger.membership(group, bot) == "leave", "rejected")
        code = await r.roost.pairing.issue("bob")
        third = await dm_with_bot(stranger, bot)
        await stranger.say(third, f"/pair {code}")
        await stranger.say(third, "now?")
        await stranger.wait(lambda: "Hi Bob, paired." in stranger.texts(third, bot), "answered")
        await r.channel.idle()
        refused = r.events("access.refused")
        bound = await r.roost.pairing.bound_tenant("matrix", who)
    (refusal,) = stranger.texts(first, bot)
    assert "/pair CODE" in refusal and who in refusal
    assert stranger.texts(second, bot) == [] and stranger.joins(group, bot) == 0
    paired, answer = stranger.texts(third, bot)
    assert "bob" in paired and answer == "Hi Bob, paired." and bound == "bob"
    assert refused == [{"channel": "matrix", "identity": who, "suppressed": 0}]
    assert stranger.membership(third, bot) == "join"


async def test_files_are_size_checked_before_download_and_while_downloading(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    big, small = b"x" * 4096, b"small file"
    settings = mx_settings(home, synapse, accounts, limits={"attachment_bytes": 1024})
    async with running(settings, ScriptedBackend("got it", "got it", "got it")) as r:
        room = await dm_with_bot(alice, bot)
        big_uri = await alice.upload(big, "text/plain", "big.txt")
        small_uri = await alice.upload(small, "text/plain", "small.txt")

        def file(uri: str, name: str, size: int) -> dict[str, object]:
            info = {"mimetype": "text/plain", "size": size}
            return {"msgtype": "m.file", "body": name, "url": uri, "info": info}

        await alice.send(room, file(big_uri, "big.txt", len(big)))  # declared too large
        await alice.send(room, file(big_uri, "liar.txt", 10))  # declared small: cut off
        await alice.send(room, file(small_uri, "small.txt", len(small)))
        await alice.wait(lambda: len(alice.texts(room, bot)) == 3, "three answers")
        await r.channel.idle()
        refused = r.channel.fetcher.refused
        inbox = r.roost.tenant_dirs("alice").inbox
        stored = [p.read_bytes() for p in inbox.iterdir() if not p.name.startswith(".")]
    too_large, cut_off, answer = alice.texts(room, bot)
    assert "big.txt" in too_large and "liar.txt" in cut_off and answer == "got it", alice.texts(
        room, bot
    )
    assert refused == 2
    assert stored == [small]


async def test_an_encrypted_room_gets_a_clear_refusal_once(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    ciphertext = {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg2yyOwAtHaZTwyNg37afzg8f3r9I",
        "device_id": "RJYKSTBOIE",
        "sender_key": "IlRMeOPX2e0MurIyfWEucYBRVOEEUMrOHqn/8mLqMjA",
        "session_id": "X3lUlvLELLYxeTx4yOVu6UDpasGEVO0Jbu+QFnm0cKQ",
    }
    backend = ScriptedBackend()
    async with running(mx_settings(home, synapse, accounts), backend) as r:
        room = await dm_with_bot(alice, bot, encrypted=True)
        await alice.send(room, ciphertext, "m.room.encrypted")
        await alice.send(room, ciphertext, "m.room.encrypted")
        await alice.say(room, "and in plain text")
        await alice.wait(lambda: alice.texts(room, bot)[1:] == ["ok"], "the notice, an answer")
        await r.channel.idle()
    notice, answer = alice.answers(room, bot)
    assert notice == {"msgtype": "m.notice", "body": ENCRYPTED} and answer["body"] == "ok"
    assert len(backend.requests) == 1


async def test_after_a_restart_nothing_is_answered_twice_and_nothing_missed(
    home: Path, synapse: Synapse, accounts: Accounts, alice: Person
) -> None:
    bot = accounts.bot.user_id
    settings = mx_settings(home, synapse, accounts)
    first = ScriptedBackend("first answer", "again?!")
    async with running(settings, first) as r:
        room = await dm_with_bot(alice, bot)
        await alice.say(room, "hello")
        await alice.wait(lambda: alice.texts(room, bot) == ["first answer"], "the answer")
        await r.channel.idle()
    await alice.say(room, "while you were away")  # the sync token was stored before the stop
    second = ScriptedBackend("the one you missed", "again?!")
    async with running(settings, second) as r:
        await alice.wait(lambda: len(alice.texts(room, bot)) == 2, "the missed one")
        await alice.wait(lambda: alice.texts(room, bot)[-1] == "the one you missed", "edited")
        await r.channel.idle()
    assert alice.texts(room, bot) == ["first answer", "the one you missed"]
    assert len(first.requests) == 1 and len(second.requests) == 1
    assert "while you were away" in str(second.requests[0].messages[-1].content)

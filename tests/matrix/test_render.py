"""Markdown -> Matrix contents and a /sync answer -> what the channel acts on (pure)."""

from __future__ import annotations

import json

from bridge.channels.matrix.events import read, without_mention
from bridge.channels.matrix.platform import PLATFORM, person_of
from bridge.channels.matrix.render import EVENT_BUDGET, contents, edit
from tests.fresh import python_c

BOT = "@roost:example.org"


def test_formatting_is_a_safe_html_subset_and_raw_html_stays_text() -> None:
    (c,) = contents(
        "**b** _i_ ~~s~~ `a<b` [ok](https://x.org/?a=1&b=2) [no](javascript:alert(1))\n\n"
        '> quoted\n\n```py\nif a < b:\n    pass\n```\n\n<img src=x onerror="alert(1)">'
    )
    html = c["formatted_body"]
    assert c["format"] == "org.matrix.custom.html"
    assert "<strong>b</strong> <em>i</em> <del>s</del> <code>a&lt;b</code>" in html
    assert '<a href="https://x.org/?a=1&amp;b=2">ok</a>' in html
    assert "javascript:" not in html.replace("(javascript:alert(1))", "")
    assert '<pre><code class="language-py">if a &lt; b:\n    pass</code></pre>' in html
    assert "<blockquote>quoted</blockquote>" in html
    assert "<img" not in html and "&lt;img" in html
    assert "**" not in c["body"] and "<img" in c["body"]  # the plain fallback reads as text


def test_plain_text_has_no_formatted_body() -> None:
    assert contents("just words 🎉") == [{"msgtype": "m.text", "body": "just words 🎉"}]


def test_a_long_answer_is_split_without_cutting_words_or_emoji() -> None:
    text = " ".join(["word👩🏽‍💻"] * 3000)
    parts = contents(text, limit=1000)
    assert len(parts) > 10
    bodies = [p["body"] for p in parts]
    assert " ".join(bodies).split() == text.split()  # every word whole, in order


def test_contents_stay_inside_the_event_limit_even_for_an_edit() -> None:
    heavy = "&" * 7000 + "\n\n" + "**" + "<" * 7000 + "**"  # escaping quintuples the size
    for c in contents(heavy):
        assert len(json.dumps(c).encode()) <= EVENT_BUDGET * 2
        assert len(json.dumps(edit("$e", c)).encode()) < 65_536


def test_an_edit_is_m_replace_with_new_content_and_a_fallback() -> None:
    (new,) = contents("**done**")
    e = edit("$orig", new)
    assert e["m.relates_to"] == {"rel_type": "m.replace", "event_id": "$orig"}
    assert e["m.new_content"] == new and e["body"] == "* done"


def sync(**rooms: object) -> dict[str, object]:
    return {"next_batch": "s72595_4483_1934", "rooms": rooms}


def test_a_sync_answer_is_read_into_messages_invites_and_leaves() -> None:
    timeline = [
        {"type": "m.room.message", "sender": "@alice:example.org", "event_id": "$1",
         "content": {"msgtype": "m.text", "body": "hello"}},
        {"type": "m.room.message", "sender": BOT, "event_id": "$2",
         "content": {"msgtype": "m.text", "body": "mine"}},
        {"type": "m.room.message", "sender": "@alice:example.org", "event_id": "$3",
         "content": {"msgtype": "m.text", "body": "* hello!",
                     "m.new_content": {"msgtype": "m.text", "body": "hello!"},
                     "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}},
        {"type": "m.room.message", "sender": "@otherbot:example.org", "event_id": "$4",
         "content": {"msgtype": "m.notice", "body": "beep"}},
        {"type": "m.room.message", "sender": "@alice:example.org", "event_id": "$5",
         "content": {"msgtype": "m.audio", "body": "Voice message", "url": "mxc://ex/abc",
                     "info": {"mimetype": "audio/ogg", "size": 2048},
                     "org.matrix.msc3245.voice": {}}},
        {"type": "m.room.encrypted", "sender": "@alice:example.org", "event_id": "$6",
         "content": {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgA"}},
        {"type": "m.room.message", "sender": "@alice:example.org", "event_id": "$7",
         "content": {"msgtype": "m.location", "body": "here", "geo_uri": "geo:1,2"}},
    ]  # fmt: skip
    invite_state = {"events": [
        {"type": "m.room.member", "sender": "@bob:example.org", "state_key": BOT,
         "content": {"membership": "invite", "is_direct": True}},
        {"type": "m.room.encryption", "state_key": "", "content": {}},
    ]}  # fmt: skip
    batch = read(
        sync(
            join={"!r:example.org": {"timeline": {"events": timeline},
                                     "summary": {"m.joined_member_count": 2}}},
            invite={"!i:example.org": {"invite_state": invite_state}},
            leave={"!gone:example.org": {}},
        ),
        BOT,
    )  # fmt: skip
    assert batch is not None and batch.next_batch == "s72595_4483_1934"
    assert [m.event_id for m in batch.messages] == ["$1", "$5", "$6"]
    voice = batch.messages[1]
    assert voice.media is not None and voice.media.voice and voice.media.size == 2048
    assert voice.text is None  # "Voice message" is the file's fallback name, not a caption
    assert batch.messages[2].encrypted
    (invite,) = batch.invites
    assert (invite.inviter, invite.direct, invite.encrypted) == ("@bob:example.org", True, True)
    assert batch.left == ["!gone:example.org"] and batch.members == {"!r:example.org": 2}
    assert batch.skipped == {"m.location": 1}
    assert read({"rooms": {}}, BOT) is None


def test_mentions_and_identities() -> None:
    mention = {"msgtype": "m.text", "body": "roost: hi", "m.mentions": {"user_ids": [BOT]}}
    pill = {
        "msgtype": "m.text",
        "body": "roost hi",
        "format": "org.matrix.custom.html",
        "formatted_body": '<a href="https://matrix.to/#/%40roost%3Aexample.org">roost</a> hi',
    }
    plain = {"msgtype": "m.text", "body": "roosters are birds"}
    events = [{"type": "m.room.message", "sender": "@a:x.org", "event_id": f"${i}", "content": c}
              for i, c in enumerate((mention, pill, plain))]  # fmt: skip
    batch = read(sync(join={"!g:x.org": {"timeline": {"events": events}}}), BOT)
    assert batch is not None
    assert [m.mentions_me for m in batch.messages] == [True, True, False]
    assert without_mention("roost: what's up?", BOT) == "what's up?"
    assert without_mention(f"hey {BOT} what's up?", BOT) == "hey what's up?"
    assert PLATFORM.parse_id(" @alice:example.org ") == "@alice:example.org"
    assert PLATFORM.parse_id("alice") is None and PLATFORM.parse_id(12345) is None
    assert person_of("@alice:example.org") == "@alice:example.org"
    assert person_of("!room:example.org|@bob:example.org") == "@bob:example.org"
    assert person_of("!room:example.org") is None


def test_mautrix_is_imported_only_when_the_channel_is_made() -> None:

    code = (
        "import sys, bridge.cli.main, bridge.app.channels_up, bridge.channels.matrix.platform;"
        "print('mautrix' in sys.modules)"
    )
    out = python_c(code)
    assert out.stdout.strip() == "False"

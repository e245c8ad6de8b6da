"""The index as live turns fill it: one exchange after another in the same chats.

A turn's exchange is findable by the next turn; a chat keeps one conversation
however many turns it has; a text the turn masked already is still screened
(a credential in it is refused) and a plain one still masked; a speaker a
retention prune removed is known again when they speak again; a failed write
leaves nothing behind that the next write would point at.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridge.loadout.mask import Masker
from bridge.recall.index import Message
from bridge.recall.indexer import Indexer
from bridge.recall.search import search
from bridge.screening.screen import secret_kinds
from bridge.types.tenant_dirs import TenantDirs

SECRET = "hunter2-correct-horse-battery"
API_KEY = "sk-proj-" + "A1b2C3d4" * 6


def test_each_turn_is_found_right_after_it_and_a_chat_stays_one_conversation(
    tmp_path: Path,
) -> None:
    indexer = Indexer(screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    vault = Masker({})
    topics = ["violin", "fjord", "basil", "kayak", "quince", "tram"]
    for n, topic in enumerate(topics):
        chat = f"c{n % 2}"
        asked, answer = vault.mask(f"tell me about the {topic}"), vault.mask(f"the {topic} is fine")
        indexer.record_exchange(dirs, "web", chat, str(n), asked, answer, 1_000.0 + n, "Ann")
        hits = search(indexer.index(dirs), topic, 5)
        assert {h.row.msg_id for h in hits} == {str(n), f"{n}:reply"}
        assert {h.row.conversation for h in hits} == {f"web:{chat}"}
    conn = indexer.index(dirs).conn
    assert conn.execute("SELECT name FROM conversations ORDER BY name").fetchall() == [
        ("web:c0",),
        ("web:c1",),
    ]
    speakers = conn.execute("SELECT name FROM speakers ORDER BY name").fetchall()
    assert speakers == [("",), ("Ann",)]  # the answers carry no name


def test_a_masked_text_is_still_screened_and_a_plain_one_still_masked(tmp_path: Path) -> None:
    masker = Masker({"wifi": SECRET})
    indexer = Indexer(lambda dirs, text: masker.mask(text), screen=secret_kinds)
    dirs = TenantDirs.of(tmp_path, "t")
    masked_key = masker.mask(f"my OpenAI key is {API_KEY}")  # masked, but not a vault value
    got = indexer.admit(
        dirs,
        [
            Message("web:c", "1", "user", masked_key, 1, "web"),
            Message("web:c", "2", "user", f"plain text with {SECRET}", 2, "web"),
            Message("web:c", "3", "user", masker.mask(f"masked {SECRET}"), 3, "web"),
        ],
    )
    assert (got.added, got.refused) == (2, 1)
    stored = {r.msg_id: r.text for r in indexer.index(dirs).iter_all()}
    assert stored == {"2": "plain text with [vault:wifi]", "3": "masked [vault:wifi]"}


def test_a_speaker_pruned_away_is_known_again_when_they_speak_again(tmp_path: Path) -> None:
    indexer = Indexer()
    dirs = TenantDirs.of(tmp_path, "t")
    indexer.admit(dirs, [Message("web:c", "1", "user", "old violin", 1_000, "web", "Zelda")])
    index = indexer.index(dirs)
    assert "zelda" in index.speaker_terms()
    assert index.delete_before(5_000) == 1
    assert "zelda" not in index.speaker_terms()
    indexer.admit(dirs, [Message("web:c", "2", "user", "new violin", 9_000, "web", "Zelda")])
    assert "zelda" in index.speaker_terms()


def test_a_failed_write_leaves_no_conversation_the_next_write_points_at(tmp_path: Path) -> None:
    indexer = Indexer()
    dirs = TenantDirs.of(tmp_path, "t")
    bad = Message("web:new", "2", "user", "x", 2, "web", object())  # type: ignore[arg-type]
    good = Message("web:new", "1", "user", "first note on quinces", 1, "web")
    with pytest.raises(sqlite3.Error):
        indexer.admit(dirs, [good, bad])  # the conversation's row is rolled back with it
    indexer.admit(dirs, [good])
    rows = list(indexer.index(dirs).iter_all())  # joined with conversations: none lost
    assert [(r.conversation, r.text) for r in rows] == [("web:new", "first note on quinces")]
    assert [h.row.msg_id for h in search(indexer.index(dirs), "quinces", 5)] == ["1"]

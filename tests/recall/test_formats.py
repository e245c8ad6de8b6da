"""Import: the three formats, streamed; malformed items counted and named; idempotent."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest

from bridge.recall.formats import Message, Skipped, Started, read
from bridge.recall.importer import import_stream
from bridge.recall.indexer import Indexer
from bridge.recall.jsonstream import BadJson, iter_array
from bridge.recall.service import Recall
from bridge.storage.protocol import Database
from bridge.types.tenant_dirs import TenantDirs
from tests.recall.exports import chatgpt_conversation, claude_conversation


def line(conv: str, mid: str, text: str, role: str = "user") -> str:
    return json.dumps(
        {
            "conversation": conv,
            "id": mid,
            "role": role,
            "text": text,
            "time": "2024-05-01T10:00:00Z",
        }
    )


async def test_jsonl_names_each_malformed_line_and_imports_the_rest(
    tmp_path: Path, db: Database
) -> None:
    rows = [
        line("c1", "1", "we adopted a puppy named Biscuit"),
        "{not json",
        json.dumps(
            {"conversation": "c1", "id": "2", "role": "system", "text": "x", "time": "2024"}
        ),
        "",
        json.dumps({"conversation": "c1", "id": "3", "role": "user", "text": "x", "time": "soon"}),
        line("c2", "1", "Biscuit chewed the sofa", "assistant"),
        json.dumps([1, 2]),
    ]
    data = ("\n".join(rows) + "\n").encode()
    dirs = TenantDirs.of(tmp_path, "t")
    indexer = Indexer(db)
    summary = await import_stream(indexer, dirs, "jsonl", io.BytesIO(data))
    assert (summary.conversations, summary.messages, summary.added) == (2, 2, 2)
    assert [s.where for s in summary.skipped] == ["line 2", "line 3", "line 5", "line 7"]
    assert "'role'" in summary.skipped[1].why
    assert any("line 5" in text for text in summary.lines())
    again = await import_stream(indexer, dirs, "jsonl", io.BytesIO(data))
    assert (again.added, again.known) == (0, 2)
    hits = (await Recall(indexer).find(dirs, "what was the puppy called", 5)).hits
    assert hits[0].row.text == "we adopted a puppy named Biscuit"


def test_chatgpt_export_reads_the_current_branch_only(tmp_path: Path) -> None:
    data = json.dumps(
        [chatgpt_conversation("conv-a", "Lisbon"), chatgpt_conversation("conv-b", "Oslo")]
    )
    items = list(read("chatgpt", io.BytesIO(data.encode())))
    messages = [i for i in items if isinstance(i, Message)]
    assert [i.conversation for i in items if isinstance(i, Started)] == [
        "chatgpt:conv-a",
        "chatgpt:conv-b",
    ]
    first = [(m.msg_id, m.role, m.text) for m in messages if m.conversation == "chatgpt:conv-a"]
    assert first == [
        ("u1", "user", "Tell me about Lisbon"),
        ("a2", "assistant", "Lisbon is lovely."),
        ("u2", "user", "and a photo of Lisbon"),
    ]
    assert messages[0].at_ms == 1_700_000_001_000


def test_claude_export_reads_text_blocks(tmp_path: Path) -> None:
    data = json.dumps([claude_conversation("k1", "falconry"), {"uuid": 5}, "junk"]).encode()
    items = list(read("claude", io.BytesIO(data)))
    messages = [i for i in items if isinstance(i, Message)]
    assert [(m.role, m.text) for m in messages] == [
        ("user", "What do you know about falconry?"),
        ("assistant", "falconry has a long history."),
    ]
    assert [(s.where) for s in items if isinstance(s, Skipped)] == [
        "conversation 2",
        "conversation 3",
    ]


def test_a_big_export_is_read_element_by_element(tmp_path: Path) -> None:
    """Chunks of 4 KiB over 300 conversations: elements come out while the file is read."""
    convs = [claude_conversation(f"id{i}", f"topic{i}") for i in range(300)]
    data = json.dumps(convs).encode()
    stream = io.BytesIO(data)
    seen = [element.offset for element in iter_array(stream, chunk=4096)]
    assert len(seen) == 300 and seen == sorted(seen)
    assert seen[0] <= 2 * 4096  # the first conversation comes before the file is read
    assert max(b - a for a, b in itertools.pairwise(seen)) <= 3 * 4096


def test_broken_json_in_an_export_stops_with_the_element_number() -> None:
    good = json.dumps(claude_conversation("k1", "a"))
    data = f'[{good}, {{"uuid": }}, {good}]'.encode()
    with pytest.raises(BadJson, match="element 2"):
        list(read("claude", io.BytesIO(data)))
    with pytest.raises(BadJson, match="not a JSON array"):
        list(read("chatgpt", io.BytesIO(b'{"conversations": []}')))

"""`roost import` of hostile or malformed files, and recall of a time no date can show.

A bad line or conversation (a time out of range, nesting too deep, a lone
surrogate) is skipped and named and the rest imported (exit 0); a fault of
the whole file (an export that is not UTF-8 or nested too deeply to read) stops
with one line and exit 2, never a traceback. A row an older roost stored with
such a time is shown by `roost recall`, /recall and the export, not an error.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.database import open_database
from bridge.recall.export import history_line
from bridge.recall.formats import Skipped, parse_time, read
from bridge.recall.index import Message, Row
from bridge.recall.indexer import Indexer
from bridge.recall.jsonstream import BadJson, iter_array
from bridge.recall.service import when
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.fake_openai import FakeOpenAI
from tests.recall.exports import chatgpt_conversation, claude_conversation
from tests.spine.test_daemon import env_for, run

GOOD = {"conversation": "c", "id": "2", "role": "user", "text": "the otter is called Pip"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def bad_line(time: str) -> bytes:
    return b'{"conversation": "c", "id": "1", "role": "user", "text": "hi", "time": %s}' % (
        time.encode()
    )


@pytest.mark.parametrize(
    ("first", "why"),
    [
        (bad_line("1e15"), "time out of range"),  # SQLite holds it, a date cannot
        (bad_line("1e400"), "time is not a finite number"),  # inf: OverflowError
        (bad_line("100000000000000000000"), "time out of range"),  # too big for SQLite
        (bad_line('"0001-01-01T00:00:00+14:00"'), "time out of range"),  # before the year 1
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),  # RecursionError
        (bad_line('1, "text": "a\\ud800"'), "text is not valid Unicode"),  # SQLite refuses it
    ],
)
async def test_a_hostile_jsonl_line_is_skipped_and_named_and_the_rest_imported(
    home: Path, tmp_path: Path, fake: FakeOpenAI, first: bytes, why: str
) -> None:
    env = env_for(home, fake)
    file = tmp_path / "in.jsonl"
    file.write_bytes(first + b"\n" + json.dumps({**GOOD, "time": 1_700_000_000}).encode() + b"\n")
    code, out, err = await run(["import", "--tenant", "alice", str(file)], env)
    assert code == 0, err
    assert "Traceback" not in err
    assert "1 messages read: 1 added" in out
    assert f"line 1: {why}" in out
    code, out, err = await run(["recall", "--tenant", "alice", "otter"], env)
    assert code == 0, err
    assert "Pip" in out and "2023-11-14" in out


async def test_a_far_time_in_an_export_skips_its_conversation_only(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    """`create_time: 1e20` raised OverflowError inside `Indexer.admit`: the batch was lost."""
    env = env_for(home, fake)
    file = tmp_path / "conversations.json"
    convs = [chatgpt_conversation("far", "otters", t0=1e20), chatgpt_conversation("g1", "newts")]
    file.write_text(json.dumps(convs))
    code, out, err = await run(
        ["import", "--tenant", "alice", "--format", "chatgpt", str(file)], env
    )
    assert code == 0, err
    assert "1 conversations, 3 messages read: 3 added" in out
    assert "conversation 1: time out of range" in out


@pytest.mark.parametrize(
    ("fmt", "data", "why"),
    [
        ("chatgpt", b"[" + b"[" * 200_000 + b"]" * 200_000 + b"]", "element 1: nested too deeply"),
        ("chatgpt", b'[{"conversation_id":"c\xff\xfe","mapping":{}}]', "not UTF-8 (byte 23"),
        ("claude", b'[{"uuid": "u", "chat_messages": [], "x": "\xc3\x28"}]', "not UTF-8 (byte 43"),
    ],
)
async def test_an_export_that_cannot_be_read_stops_with_one_line_and_exit_2(
    home: Path, tmp_path: Path, fake: FakeOpenAI, fmt: str, data: bytes, why: str
) -> None:
    env = env_for(home, fake)
    file = tmp_path / "conversations.json"
    file.write_bytes(data)
    code, _, err = await run(["import", "--tenant", "alice", "--format", fmt, str(file)], env)
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert why in err


async def test_a_file_that_fails_to_read_stops_with_one_line_and_exit_2(
    home: Path, fake: FakeOpenAI
) -> None:
    """A read that fails (EIO here: a process's own memory at offset 0; EACCES for an
    operator who may not read it) was a traceback."""
    code, _, err = await run(["import", "--tenant", "alice", "/proc/self/mem"], env_for(home, fake))
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "roost import: cannot read /proc/self/mem: Input/output error." in err


def test_an_invalid_byte_is_named_across_chunks() -> None:
    """The position counts the bytes held back from the chunk before (a cut sequence)."""
    good = json.dumps(claude_conversation("k1", "a")).encode()
    data = b"[" + good + b', {"uuid": "\xe2\x82' + b'x"}]'
    at = data.index(b"\xe2") + 1
    for chunk in (7, 64, 1 << 20):
        with pytest.raises(BadJson, match=f"byte {at:,}"):
            list(iter_array(io.BytesIO(data), chunk=chunk))


def test_parse_time_refuses_what_a_date_cannot_show() -> None:
    assert parse_time(0) == 0
    assert parse_time("2024-05-01T10:00:00Z") == 1_714_557_600_000
    assert parse_time("9999-12-31T23:59:59.999+00:00") == 253_402_300_799_999
    assert parse_time("0001-01-01T00:00:00Z") == -62_135_596_800_000
    for value in (1e15, -1e15, 10**20, float("inf"), float("nan"), "0001-01-01T00:00:00+01:00"):
        with pytest.raises(ValueError):
            parse_time(value)


def test_a_deep_claude_conversation_is_skipped_not_raised() -> None:
    """Nesting the decoder reads but a conversation's fields do not need is no error."""
    deep: object = "x"
    for _ in range(50):
        deep = [deep]
    conv = {**claude_conversation("k1", "a"), "extra": deep}
    conv["chat_messages"][0]["created_at"] = 1e400
    items = list(read("claude", io.BytesIO(json.dumps([conv]).encode())))
    assert items == [Skipped("conversation 1", "time is not a finite number")]


def far_row(at_ms: int) -> Row:
    return Row(1, "c", "1", "user", "", at_ms, "import", "x")


def test_a_stored_time_no_date_can_show_is_rendered_not_raised() -> None:
    assert when(1_700_000_000_000) == "2023-11-14 22:13 UTC"
    assert "out of range" in when(10**18) and "out of range" in when(-(10**18))
    assert json.loads(history_line(far_row(10**18)))["time"] == 10**15
    assert json.loads(history_line(far_row(1_700_000_000_123)))["time"] == (
        "2023-11-14T22:13:20.123Z"
    )


async def test_recall_shows_a_row_an_older_roost_stored_with_a_far_time(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    """Every search that found the row failed: `roost recall` exit 1, /recall 'went wrong'."""
    env = env_for(home, fake)
    db = await open_database(home / "roost.db")
    try:
        dirs = TenantDirs.of(home, "alice").ensure()
        far = Message("c", "1", "user", "my favourite pangolin is Bertram", 10**18, "import")
        assert (await Indexer(db).admit(dirs, [far])).added == 1
    finally:
        await db.aclose()
    for extra in ([], ["--json"]):
        code, out, err = await run(["recall", "--tenant", "alice", *extra, "pangolin"], env)
        assert code == 0, err
        assert "Bertram" in out and "out of range" in out
    code, out, err = await run(["send", "--tenant", "alice", "/recall pangolin"], env)
    assert code == 0, err
    assert "Bertram" in out and "went wrong" not in out

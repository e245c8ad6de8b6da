"""The page's kept commands are bounded, and a command with a line separator stays.

Over a real socket with the daemon's own web factory and a real core (the fixtures
of `test_web_history`). Before: a tenant could fill the disk through its kept
commands (16,000 characters each, 300 per chat, any number of chat ids), a history
page held every command of its range whatever its `limit`, and a command holding
U+2028, U+2029 or U+0085 vanished from the history (split as a line ending).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.channels.web import commandlog
from tests.spine.test_web_history import chat, get, served


def folder(home: Path) -> Path:
    return home / "tenants" / "alice" / "web" / "commands"


def commands(page: dict[str, object]) -> list[str]:
    """The texts of the command messages of a history page."""
    listed = page["messages"]
    assert isinstance(listed, list)
    return [m["text"] for m in listed if m.get("kind") == "command"]


async def test_a_long_command_is_kept_cut_with_a_mark(home: Path) -> None:
    async with served(home) as site:
        await chat(site, "/nosuchcmd " + "x" * 15_000)
        _, page = await get(site, "/api/history?chat=c")
        asked = commands(page)[0]
        assert asked.startswith("/nosuchcmd xxx") and asked.endswith("…")
        assert len(asked) <= commandlog.ASKED_MAX
        (path,) = folder(home).glob("*.jsonl")
        assert path.stat().st_size < 15_000


async def test_a_tenant_keeps_a_bounded_number_of_chat_files(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commandlog, "CHATS", 3, raising=False)
    async with served(home) as site:
        for n in range(6):
            await chat(site, f"/nosuchcmd {n}", chat=f"c{n}")
        assert len(list(folder(home).glob("*.jsonl"))) == 3
        _, newest = await get(site, "/api/history?chat=c5")
        assert commands(newest)[0] == "/nosuchcmd 5"
        _, oldest = await get(site, "/api/history?chat=c0")
        assert commands(oldest) == []


async def test_a_chats_file_is_bounded_in_bytes_oldest_dropped(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commandlog, "CHAT_BYTES", 10_000, raising=False)
    async with served(home) as site:
        for n in range(8):
            await chat(site, f"/nosuchcmd {n} " + "y" * 3_000)
        (path,) = folder(home).glob("*.jsonl")
        assert path.stat().st_size <= 10_000
        _, page = await get(site, "/api/history?chat=c")
        asked = [t for t in commands(page) if t.startswith("/nosuchcmd")]
        assert asked and asked[-1].startswith("/nosuchcmd 7 ")
        assert not any(t.startswith("/nosuchcmd 0 ") for t in asked)


async def test_a_history_page_holds_at_most_limit_commands(home: Path) -> None:
    async with served(home) as site:
        for n in range(5):
            await chat(site, f"/nosuchcmd {n}")
        _, page = await get(site, "/api/history?chat=c&limit=2")
        asked = commands(page)[::2]
        assert asked == ["/nosuchcmd 3", "/nosuchcmd 4"]
        _, full = await get(site, "/api/history?chat=c")
        assert len(commands(full)) == 10


@pytest.mark.parametrize("mark", ["\u2028", "\u2029", "\x85"])
async def test_a_command_with_a_line_separator_stays(home: Path, mark: str) -> None:
    async with served(home) as site:
        await chat(site, f"/nosuchcmd a{mark}b")
        await chat(site, "/nosuchcmd after")
        _, page = await get(site, "/api/history?chat=c")
        asked = commands(page)[::2]
        assert asked == [f"/nosuchcmd a{mark}b", "/nosuchcmd after"]

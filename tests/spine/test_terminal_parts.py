"""The terminal's pure parts: tool lines, links, dropped paths, attaching, the chat log.

Each is checked on its own here; `test_terminal_items.py` runs them through
the real `roost chat` under a pty.
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bridge.app.lazy_broker import LazyBroker
from bridge.channels.terminal.attach import Attacher, AttachError, local_command, named_path
from bridge.channels.terminal.links import AnswerMarkdown, hyperlinks
from bridge.channels.terminal.paths import dropped, words
from bridge.channels.terminal.progress import person_name, step_line
from bridge.cli.chat_log import log_to_file
from bridge.types.progress import ModelInfo, RetryStep, ToolStep

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def test_a_tool_call_is_one_line_with_the_name_the_person_knows() -> None:
    assert step_line(ToolStep("1", "me__wordcount", "start", "{}")) is None
    done = step_line(ToolStep("1", "me__wordcount", "done", "{}", "3", ms=12))
    assert done == "  tool me.wordcount · ok · 12 ms"
    failed = step_line(ToolStep("2", "mcp__github__list_issues", "error", "{}", "x", ms=2500))
    assert failed == "  tool github.list_issues · error · 2.5 s"
    assert person_name("remember") == "remember"  # a built-in keeps its name
    assert step_line(RetryStep(1, 3, "the model server is busy (HTTP 429)")) == (
        "  retrying: the model server is busy (HTTP 429) · 1 of 3"
    )
    assert step_line(ModelInfo("m1")) is None


def shown(markdown: str, osc8: bool) -> str:
    out = io.StringIO()
    Console(file=out, width=100, force_terminal=True, color_system="standard").print(
        AnswerMarkdown(markdown, osc8)
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())  # colours off, links kept


def test_a_link_shows_its_url_unless_the_terminal_links_it() -> None:
    plain = shown("see [the docs](https://example.org/docs) now", osc8=False)
    assert "the docs (https://example.org/docs)" in plain
    assert "\x1b]8;" not in plain
    linked = shown("see [the docs](https://example.org/docs) now", osc8=True)
    assert "\x1b]8;" in linked and "https://example.org/docs" in linked
    auto = shown("at <https://example.org/a>", osc8=False)
    assert auto.count("https://example.org/a") == 1  # an autolink once, not `url (url)`


@pytest.mark.parametrize(
    ("env", "osc8"),
    [
        ({}, False),
        ({"TERM": "xterm-256color"}, False),
        ({"TERM": "xterm-kitty"}, True),
        ({"VTE_VERSION": "7600", "TERM": "xterm-256color"}, True),
        ({"VTE_VERSION": "4800"}, False),
        ({"TERM_PROGRAM": "iTerm.app"}, True),
        ({"TERM_PROGRAM": "iTerm.app", "TMUX": "/tmp/x"}, False),
        ({"TERM": "screen-256color", "WT_SESSION": "1"}, False),
        ({"FORCE_HYPERLINK": "1"}, True),
        ({"FORCE_HYPERLINK": "0", "TERM": "xterm-kitty"}, False),
    ],
)
def test_hyperlinks_only_where_the_terminal_is_known_to_show_them(
    env: dict[str, str], osc8: bool
) -> None:
    assert hyperlinks(env) is osc8


def test_dropped_paths_as_terminals_paste_them(tmp_path: Path) -> None:
    a, b = tmp_path / "my file.pdf", tmp_path / "it's.txt"
    a.write_bytes(PDF)
    b.write_text("x")
    escaped = str(a).replace(" ", "\\ ")
    assert dropped(f"'{a}'") == ("", [a])  # GNOME Terminal, Konsole
    assert dropped(f"{escaped} what is in it?") == ("what is in it?", [a])  # iTerm2, kitty
    assert dropped(f"summarise file://{str(a).replace(' ', '%20')}") == ("summarise", [a])
    assert dropped(f'compare {escaped} "{b}"') == ("compare", [a, b])
    assert dropped(f"is {escaped} big?")[1] == []  # mid-sentence: text
    assert dropped(f"'{tmp_path}/nothing.pdf'") == (f"'{tmp_path}/nothing.pdf'", [])
    assert dropped(f"{tmp_path}")[1] == []  # a directory is not a file
    assert dropped("it's /etc fine")[1] == []  # an open quote: prose
    assert words("it's") is None


def test_named_path_reads_quotes_escapes_and_home(tmp_path: Path) -> None:
    assert named_path(f"'{tmp_path}/a b.txt'") == tmp_path / "a b.txt"
    assert named_path(f"{tmp_path}/a\\ b.txt") == tmp_path / "a b.txt"
    assert named_path("~/x.txt") == Path.home() / "x.txt"


def facts(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), stat.S_IMODE(path.stat().st_mode)


async def test_attach_copies_into_the_inbox_privately_and_checks_size_and_type(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    src = tmp_path / "report.pdf"
    src.write_bytes(PDF)
    attacher = Attacher(inbox, lambda: 1000)
    reply = await local_command(attacher, f"/attach {src}")
    assert reply is not None and "report.pdf" in reply and "next message" in reply
    [att] = attacher.pending
    copy = Path(att.path)
    assert copy.parent == inbox and copy.name.startswith("cli-") and copy.suffix == ".pdf"
    assert facts(copy) == (PDF, 0o600)
    assert (att.kind, att.mime, att.name, att.size) == (
        "document",
        "application/pdf",
        "report.pdf",
        len(PDF),
    )
    assert attacher.take() == (att,) and attacher.take() == ()

    big = tmp_path / "big.txt"
    big.write_text("x" * 1001)
    with pytest.raises(AttachError, match="too large"):
        attacher.add(big)
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 2)
    with pytest.raises(AttachError, match="cannot read"):
        attacher.add(binary)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(AttachError, match="not a plain file"):  # refused without a read
        attacher.add(fifo)
    with pytest.raises(AttachError, match="no file"):
        attacher.add(tmp_path / "missing.pdf")
    assert sorted(p.name for p in inbox.iterdir()) == [copy.name]  # nothing left behind

    attacher.add(src)
    assert await local_command(attacher, "/detach") == "📎 1 file dropped"
    assert sorted(p.name for p in inbox.iterdir()) == [copy.name]
    assert await local_command(attacher, "hello") is None


def test_the_chat_log_is_a_private_file_and_counts_warnings(tmp_path: Path) -> None:
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    root.addHandler(handler)
    try:
        log = log_to_file(tmp_path)
        assert log is not None
        logging.getLogger("roost.test").warning("a warning for the log")
        assert handler.stream is not sys.stderr
        handler.flush()
        path = tmp_path / "logs" / "chat.log"
        assert "a warning for the log" in path.read_text()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert log.notice() == f"(1 warning in {path})"
        assert log.notice() is None
    finally:
        root.removeHandler(handler)
        if handler.stream is not sys.stderr:
            handler.stream.close()
        for h in list(root.handlers):
            if type(h).__name__ == "_Count":
                root.removeHandler(h)
        logging.captureWarnings(False)


class _Real:
    def __init__(self) -> None:
        self.calls: list[str] = []


def test_the_lazy_broker_is_made_once_on_first_use() -> None:
    made: list[int] = []

    def make() -> object:
        made.append(1)
        return _Real()

    broker = LazyBroker(make)  # type: ignore[arg-type]
    assert not broker.made and not made
    assert broker.real is broker.real
    assert broker.made and made == [1]

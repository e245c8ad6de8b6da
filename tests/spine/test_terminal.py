"""`roost chat` in a real terminal (a pty seen through pyte) against the fake model server.

A person types, sees the answer stream and then rendered as Markdown, recalls
an earlier line after a restart, completes commands with Tab, writes across
lines, stops an answer with Ctrl-C and goes on, and leaves with Ctrl-D.
"""

from __future__ import annotations

import asyncio
import os
import signal
import termios
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import FakeOpenAI, Text, last_user_text
from tests.spine.terminal_pty import ROOST, Terminal
from tests.waits import HANG_S

KEY = "sk-test-key-000000000000"
UP, ENTER, ALT_ENTER, CTRL_C, CTRL_D, TAB = "\x1b[A", "\r", "\x1b\r", "\x03", "\x04", "\t"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY, models=["m1"]) as server:
        yield server


@pytest.fixture
async def term() -> AsyncIterator[Terminal]:
    terminal = Terminal()
    yield terminal
    await terminal.close()


def env_for(home: Path, fake: FakeOpenAI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=os.environ["ROOST_CONFIG"],
        ROOST_LLM__BASE_URL=fake.base_url,
        ROOST_LLM__API_KEY=KEY,
        ROOST_LLM__MODEL="m1",
    )
    return env


async def test_a_streamed_answer_is_rendered_once_and_ctrl_d_exits_0(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    fake.script(Text("Here is **bold** and `code`, once."))
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    assert "Alt+Enter" in term.text() and "Ctrl-C" in term.text()  # the banner says how
    term.type("hello there" + ENTER)
    await term.see("Here is bold and code, once.")
    screen = await term.see("you>", 2)
    assert "**" not in screen and "`" not in screen  # Markdown rendered, not shown raw
    assert screen.count("once.") == 1  # the final rendering replaced the streamed text
    term.type(CTRL_D)
    assert await term.exit_status() == 0
    assert last_user_text(fake.requests[-1]) == "hello there"


async def test_without_a_model_the_offline_answer_shows_once(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    env = {k: v for k, v in env_for(home, fake).items() if not k.startswith("ROOST_LLM__")}
    await term.start(["chat"], env)
    await term.see("you>")
    term.type("tell me a story" + ENTER)  # the offline backend streams its explanation
    screen = await term.see("you>", 2)
    assert screen.count("No model is configured") == 1
    term.type("/quit" + ENTER)
    assert await term.exit_status() == 0


async def test_history_survives_a_restart_and_up_recalls_it(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    env = env_for(home, fake)
    await term.start(["chat"], env)
    await term.see("you>")
    term.type("the line to remember" + ENTER)
    await term.see("echo: the line to remember")
    await term.see("you>", 2)
    term.type(CTRL_D)
    assert await term.exit_status() == 0
    history = home / "tenants" / "local" / "terminal-history"
    assert history.stat().st_mode & 0o777 == 0o600
    await term.close()

    again = Terminal()
    try:
        await again.start(["chat"], env)
        await again.see("you>")
        again.type(UP)
        await again.see("you> the line to remember")
        again.type(ENTER)
        await again.see("echo: the line to remember")
    finally:
        await again.close()
    assert [last_user_text(r) for r in fake.requests] == ["the line to remember"] * 2


async def test_tab_completes_a_command(home: Path, fake: FakeOpenAI, term: Terminal) -> None:
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type("/hel" + TAB)
    await term.see("you> /help")
    term.type(ENTER)
    await term.see("/reset")  # /help lists the most used commands
    await term.see("/remember")
    await term.see("/help all")  # and how to see the rest
    await term.see("In this terminal: Tab completes")  # /help adds the editor's keys
    assert not fake.requests  # a command, no model


async def test_multi_line_input(home: Path, fake: FakeOpenAI, term: Terminal) -> None:
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type("one\\" + ENTER + "two" + ALT_ENTER + "three" + ENTER)
    await term.see("echo: one")
    await term.see("you>", 2)
    assert last_user_text(fake.requests[-1]) == "one\ntwo\nthree"


async def test_ctrl_c_stops_the_answer_and_the_next_message_is_answered(
    home: Path, term: Terminal
) -> None:
    words = [f"word{n} " for n in range(400)]
    async with FakeOpenAI(api_key=KEY, models=["m1"], chunk_delay_s=0.05) as fake:
        fake.script(Text("".join(words), pieces=words))
        await term.start(["chat"], env_for(home, fake))
        await term.see("you>")
        term.type("tell me everything" + ENTER)
        await term.see("word3")
        term.type(CTRL_C)
        screen = await term.see("(stopped)")
        assert "word399" not in screen
        await term.see("you>", 2)
        term.type("and now?" + ENTER)
        await term.see("echo: and now?")
        await term.see("you>", 3)
        term.type("half a line" + CTRL_C)  # at the prompt: clears the line, does not leave
        await term.see("you>", 4)
        term.type("still here" + ENTER)
        await term.see("echo: still here")
        assert last_user_text(fake.requests[-1]) == "still here"
        await term.see("you>", 5)
        term.type(CTRL_D)
        assert await term.exit_status() == 0


async def test_typed_ahead_input_waits_in_the_line_after_ctrl_c(home: Path, term: Terminal) -> None:
    """Typed (or pasted) while the answer streams, then Ctrl-C: the kernel threw it away
    (s38), and with NOFLSH alone each whole line was sent without an Enter (atk40 #2).
    Now all of it is in the next prompt's line, and only Enter sends it, as one message."""
    words = [f"word{n} " for n in range(400)]
    async with FakeOpenAI(api_key=KEY, models=["m1"], chunk_delay_s=0.05) as fake:
        fake.script(Text("".join(words), pieces=words))
        await term.start(["chat"], env_for(home, fake))
        await term.see("you>")
        term.type("draft the mail to the landlord" + ENTER)
        await term.see("word3")
        term.type("my bank pin is 4711" + ENTER + "send it to bob" + ENTER + "and ha")
        await term.see("send it to bob")  # echoed by the terminal while the answer streams
        term.type(CTRL_C)
        screen = await term.until(
            lambda t: "you> my bank pin is 4711" in t and "...> and ha" in t, "the kept lines"
        )
        assert "word399" not in screen
        assert "...> send it to bob" in screen
        assert [last_user_text(r) for r in fake.requests] == ["draft the mail to the landlord"]
        term.type("lf" + ENTER)
        await term.see("echo: my bank pin is 4711")
        sent = [last_user_text(r) for r in fake.requests]
        assert sent == [
            "draft the mail to the landlord",
            "my bank pin is 4711\nsend it to bob\nand half",
        ]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_chat_ended_during_an_answer_puts_the_terminal_back(
    home: Path, term: Terminal, sig: signal.Signals
) -> None:
    """atk40 #8: killed during an answer, `roost chat` left NOFLSH on the terminal (the
    shell's Ctrl-C then kept typed-ahead input). The terminal is back as the turn found
    it (cooked), and the signal still ends the chat."""
    words = [f"word{n} " for n in range(400)]
    async with FakeOpenAI(api_key=KEY, models=["m1"], chunk_delay_s=0.05) as fake:
        fake.script(Text("".join(words), pieces=words))
        await term.start(["chat"], env_for(home, fake))
        await term.see("you>")
        term.type("tell me everything" + ENTER)
        await term.see("word3")
        assert termios.tcgetattr(term.master)[3] & termios.NOFLSH  # kept during the turn
        assert term.proc is not None
        term.proc.send_signal(sig)
        assert await term.exit_status() == -sig
        lflag = termios.tcgetattr(term.master)[3]
        assert not lflag & termios.NOFLSH
        assert lflag & termios.ICANON and lflag & termios.ECHO


async def test_a_chat_ended_at_its_prompt_puts_the_terminal_back(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    """SIGTERM while the prompt has the keys (raw: no echo, no line) left the shell's
    terminal raw. It is back as the chat found it, and the signal still ends the chat."""
    cooked = termios.ICANON | termios.ECHO | termios.ISIG  # a new pty's, as a shell's
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    assert not termios.tcgetattr(term.master)[3] & termios.ICANON  # the prompt's raw mode
    assert term.proc is not None
    term.proc.send_signal(signal.SIGTERM)
    assert await term.exit_status() == -signal.SIGTERM
    assert termios.tcgetattr(term.master)[3] & cooked == cooked


async def test_piped_output_is_plain_text(home: Path, fake: FakeOpenAI) -> None:
    fake.script(Text("Here is **bold** and `code`."))
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "chat",
        env=env_for(home, fake),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(b"hi\n/status\n"), HANG_S)
    assert proc.returncode == 0
    assert b"\x1b" not in out
    assert out.decode().startswith("Here is **bold** and `code`.\n\n")


async def test_history_keeps_the_newest_1000_entries(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    history = home / "tenants" / "local" / "terminal-history"
    history.parent.mkdir(parents=True)
    history.write_text("".join(f"\n# old\n+line {n}\n" for n in range(1005)))
    history.chmod(0o644)
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type(UP)
    await term.see("you> line 1004")  # loaded, so already cut
    kept = [row[1:] for row in history.read_text().splitlines() if row.startswith("+")]
    assert kept == [f"line {n}" for n in range(5, 1005)]
    term.type(CTRL_C + "new line" + ENTER)
    await term.see("echo: new line")
    assert history.stat().st_mode & 0o777 == 0o600  # made private on the first write

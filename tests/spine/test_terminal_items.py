"""`roost chat` under a pty: tool lines, links, attachments, and the log kept out of it.

A tool call shows as one dim line (its name, ok/error, how long); a link
shows its URL where the terminal does not show OSC 8 links; `/attach PATH`
and a path dropped into the prompt send a copy from the tenant's inbox with
the message; a retry's warning goes to `$ROOST_HOME/logs/chat.log` and the
conversation only says where.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes.fake_openai import Call, FakeOpenAI, Status, Text, ToolCalls, last_user_text
from tests.spine.terminal_pty import Terminal

KEY = "sk-test-key-000000000000"
ENTER = "\r"
NOTE = "the fox report: forty-two foxes"


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
    for key in ("VTE_VERSION", "TERM_PROGRAM", "WT_SESSION", "KITTY_WINDOW_ID", "DOMTERM"):
        env.pop(key, None)
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=os.environ["ROOST_CONFIG"],
        ROOST_LLM__BASE_URL=fake.base_url,
        ROOST_LLM__API_KEY=KEY,
        ROOST_LLM__MODEL="m1",
        FORCE_HYPERLINK="0",
    )
    return env


def inbox_files(home: Path) -> list[Path]:
    return sorted(home.glob("**/workspace/inbox/cli-*"))


async def test_a_tool_call_is_one_dim_line_and_a_link_shows_its_url(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    args = {"name": "foxes", "type": "reference", "description": "fox count", "content": "42"}
    fake.script(
        ToolCalls([Call("memory_save", args)]),
        Text("Saved. See [the notes](https://example.org/notes) for more."),
    )
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type("remember the foxes" + ENTER)
    await term.see("you>", 2)
    screen = term.text()
    assert "tool memory_save · ok · " in screen
    assert "the notes (https://example.org/notes)" in screen
    assert '"content"' not in screen  # the arguments stay out of the conversation


async def test_attach_sends_a_copy_from_the_inbox_with_the_next_message(
    home: Path, fake: FakeOpenAI, term: Terminal, tmp_path: Path
) -> None:
    src = tmp_path / "fox notes.txt"
    src.write_text(NOTE + "\n")
    fake.script(Text("Forty-two, then."))
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type(f"/attach {str(src).replace(' ', chr(92) + ' ')}" + ENTER)
    await term.see("goes with your next message")
    assert not fake.requests  # answered here, not a turn
    term.type("how many foxes?" + ENTER)
    await term.see("Forty-two, then.")
    said = last_user_text(fake.requests[-1])
    assert NOTE in said and "how many foxes?" in said
    [copy] = inbox_files(home)
    assert copy.read_text() == NOTE + "\n"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert str(tmp_path) not in said  # the model never sees the operator's path


async def test_a_file_dropped_into_the_prompt_goes_with_the_line(
    home: Path, fake: FakeOpenAI, term: Terminal, tmp_path: Path
) -> None:
    src = tmp_path / "fox notes.txt"
    src.write_text(NOTE + "\n")
    fake.script(Text("Forty-two foxes."))
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type(f"'{src}' what does it say?" + ENTER)  # as GNOME Terminal pastes a drop
    await term.see("Forty-two foxes.")
    assert "📎 fox notes.txt" in term.text()
    said = last_user_text(fake.requests[-1])
    assert NOTE in said and "what does it say?" in said and str(tmp_path) not in said
    assert len(inbox_files(home)) == 1


async def test_warnings_go_to_the_chat_log_not_the_conversation(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    fake.script(Status(503, "busy", retry_after=0), Text("Here after all."))
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type("hello" + ENTER)
    await term.see("Here after all.")
    log = home / "logs" / "chat.log"
    where = "".join(f"in {log})".split())  # the line may wrap anywhere at 100 columns

    screen = await term.until(lambda t: where in "".join(t.split()), repr(where))
    assert "retrying:" in screen and "1 of " in screen  # the retry as a dim line
    assert "WARNING" not in screen and "retry 1/" not in screen  # the log line is not shown
    assert "retry 1/" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600

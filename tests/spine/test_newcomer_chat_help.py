"""`roost chat`'s `/help` lists the commands the chat answers itself (s46 newcomer, finding 3).

`/quit` (also `/exit`, `:q`), `/attach` and `/detach` work in `roost chat` but its
`/help` and `/help all` named none of them. They are one table now
(`bridge.channels.terminal.local`): `/help` prints it after the core's commands, in a
terminal and piped; each row is answered, and nothing is answered that is not a row.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.channels.terminal import attach, local
from bridge.channels.terminal.channel import Backing, chat_loop
from bridge.types.messages import Final, Inbound
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.terminal_pty import ROOST, Terminal
from tests.spine.test_terminal import env_for, fake
from tests.waits import HANG_S

__all__ = ["fake"]  # the fixture, imported for the tests below

ENTER = "\r"


@pytest.fixture
async def term() -> AsyncIterator[Terminal]:
    t = Terminal()
    yield t
    await t.close()


def test_every_row_is_answered_and_every_answer_is_a_row() -> None:
    names = {c.name for c in local.LOCAL}
    assert set(attach.ANSWERS) | {"quit"} == names
    assert {"/quit", "/exit", ":q"} == local.QUIT
    assert {name for name, _ in local.COMPLETIONS} == names  # Tab completes each
    shown = local.help_text()
    assert all(c.usage in shown and c.summary in shown for c in local.LOCAL)
    assert all(alias in shown for alias in local.QUIT)


async def piped(lines: str, inbox: Path) -> tuple[str, list[str]]:
    """`chat_loop` over `lines` (not a terminal); its output and the texts the core got."""
    got: list[str] = []

    async def handle(
        inbound: Inbound, on_delta: object = None, on_progress: object = None
    ) -> Final:
        got.append(inbound.text)
        return Final(f"core: {inbound.text}", "text")

    out = io.StringIO()
    backing = Backing(handle, attacher=attach.Attacher(inbox, lambda: 1_000))
    await chat_loop(backing, "c1", io.StringIO(lines), out, "banner")
    return out.getvalue(), got


@pytest.mark.parametrize("word", sorted(local.QUIT))
async def test_each_quit_word_leaves(word: str, tmp_path: Path) -> None:
    _, got = await piped(f"first\n{word}\nnot sent\n", tmp_path)
    assert got == ["first"]


async def test_help_piped_adds_the_chats_own_commands(tmp_path: Path) -> None:
    out, got = await piped("/help\n/help all\n/help remind\n/detach\n", tmp_path)
    assert got == ["/help", "/help all", "/help remind"]  # the core still answers /help
    assert out.count(local.HEADING) == 2  # after /help and /help all, not /help remind
    assert "\n".join(local.help_lines()) in out
    assert "📎 no file waits" in out  # /detach answered here


async def test_help_in_a_terminal_lists_quit_attach_and_detach(
    home: Path, fake: FakeOpenAI, term: Terminal
) -> None:
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type("/help" + ENTER)
    await term.see("own commands")
    for line in local.help_lines():
        await term.see(line)
    await term.see("In this terminal: Tab completes")
    term.type("/quit" + ENTER)
    assert await term.exit_status() == 0
    assert not fake.requests


async def test_roost_chat_help_shows_the_same_lines(home: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "chat", "--help", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert "\n".join(local.help_lines()) in out.decode()

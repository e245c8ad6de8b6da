"""The terminal channel: `roost chat` and `roost send`.

Both run the full pipeline in this process (the same database and files as
the daemon; SQLite WAL lets them share). `chat` reads lines from stdin and
streams answers to stdout; `send` runs one turn and prints the reply. A
reply's files are printed as paths after it (`file: PATH (name)`): the
terminal runs on the machine that holds them.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TextIO

from bridge.types.messages import Final, Handle, Inbound, actions_hint

QUIT = {"/quit", "/exit", ":q"}


def inbound(text: str, chat: str) -> Inbound:
    return Inbound("cli", "local", chat, text, uuid.uuid4().hex)


def file_lines(final: Final) -> str:
    """One `file: PATH (name)` line per file of the reply, then its actions as a hint."""
    hint = actions_hint(final.actions)  # "(reply /yes k3f9 to keep as memory, or …)"
    return "".join(f"file: {f.path} ({f.name})\n" for f in final.files) + (hint and hint + "\n")


async def send_once(handle: Handle, text: str, chat: str, out: TextIO) -> int:
    """One turn; the reply on `out`. Exit status 1 when the reply is an error."""
    final = await handle(inbound(text, chat), None)
    out.write(final.text.rstrip("\n") + "\n" + file_lines(final))
    out.flush()
    return 1 if final.kind in ("error", "refusal") else 0


async def chat_loop(handle: Handle, chat: str, inp: TextIO, out: TextIO, banner: str) -> int:
    """Read lines until EOF or /quit; stream each answer as it grows."""
    interactive = inp.isatty()
    if interactive:
        out.write(banner + "\n")
    loop = asyncio.get_running_loop()
    while True:
        if interactive:
            out.write("you> ")
            out.flush()
        line = await loop.run_in_executor(None, inp.readline)
        if not line:
            break
        text = line.rstrip("\n")
        if text.strip() in QUIT:
            break
        if not text.strip():
            continue
        streamed: list[str] = []

        async def on_delta(piece: str, streamed: list[str] = streamed) -> None:
            if not streamed:
                out.write("roost> " if interactive else "")
            streamed.append(piece)
            out.write(piece)
            out.flush()

        final = await handle(inbound(text, chat), on_delta)
        if streamed and "".join(streamed).strip() == final.text.strip():
            out.write("\n")
        else:
            if streamed:
                out.write("\n")
            prefix = "roost> " if interactive else ""
            out.write(prefix + final.text.rstrip("\n") + "\n")
        out.write(file_lines(final))
        if not interactive:
            out.write("\n")
        out.flush()
    return 0

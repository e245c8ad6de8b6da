"""Spoken answers on the web page: the answer's voice as a file of the reply.

`speaking(handle, speak, out_dir)` wraps the core's `handle` for the web
channel: after an answer, `speak` (the app's `Voice.speak`: only when the
chat asked for it with `/voice on` and `[llm.speech]` is configured) gives
its voice (OGG/Opus bytes), a notice when speaking failed, or None. The
bytes are written to the tenant's `out/speech/` (atomic, 0600; the newest
`KEEP` files stay) and handed out as one more `OutFile` of the `Final`, so
the page gets a one-time signed link (`bridge.channels.web.files`) and plays
it (`js/speech.js`); a notice ends the answer's text. Anything but an
answer (a command, an error, a stopped answer) is never spoken.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path

from bridge.channels.web.turns import ProgressHandle
from bridge.types.messages import DeltaSink, Final, Inbound, OutFile
from bridge.types.progress import ProgressSink
from forge.atomic import private_dir, write_atomic

KEEP = 8  # spoken answers kept per tenant (each link works once, for ten minutes)
SPOKEN_NAME = "spoken answer.ogg"
SPOKEN_MIME = "audio/ogg"

Speak = Callable[[Inbound, str], Awaitable[bytes | str | None]]
OutDir = Callable[[Inbound], Path | None]  # the tenant's out/ directory, None when unknown


def keep_speech(directory: Path, audio: bytes) -> Path:
    """Write one spoken answer into `directory`, dropping the oldest beyond KEEP."""
    private_dir(directory)
    old = sorted(directory.glob("*.ogg"), key=lambda p: p.stat().st_mtime_ns)
    for path in old[: max(0, len(old) - (KEEP - 1))]:
        path.unlink(missing_ok=True)
    path = directory / f"{secrets.token_hex(8)}.ogg"
    write_atomic(path, audio)
    return path


def speaking(handle: ProgressHandle, speak: Speak, out_dir: OutDir) -> ProgressHandle:
    async def spoken(
        inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Final:
        final = await handle(inbound, on_delta, on_progress)
        if final.kind != "answer":
            return final
        said = await speak(inbound, final.text)
        if isinstance(said, str):  # speaking failed: the person is told, the text stays
            return dataclasses.replace(final, text=f"{final.text}\n\n{said}")
        where = out_dir(inbound) if said else None
        if said is None or where is None:
            return final
        path = await asyncio.to_thread(keep_speech, where / "speech", said)
        voice = OutFile(path, SPOKEN_NAME, SPOKEN_MIME)
        return dataclasses.replace(final, files=(*final.files, voice))

    return spoken

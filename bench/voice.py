"""Voice benchmark: roost's own overhead for a 30-second voice note, without the model.

Measured (medians of `--runs`), each through the real code:
- fetch: `voice_attachment` with python-telegram-bot against the fake Bot API
  on loopback: getFile, the download, the write into the inbox (fsync);
- form: building the transcription request's multipart body
  (`transcription_form`) and serialising it to bytes, as aiohttp sends it;
- parse: `parse_transcript` of a typical JSON answer;
- read: the handler's checked read of the file from the inbox;
- speakable: preparing a 1,500-character answer for speech;
- send: `sendVoice` of a 30 s OGG/Opus answer to the fake Bot API; the
  fake's own check of the upload (parsing the OGG pages and their CRCs in
  pure Python) is timed alone and subtracted, as it is Telegram's work.
The transcription server's own time is excluded: it is the model's. Prints
figures and the sum; no thresholds.

Run: .venv/bin/python -m bench.voice [--runs 50] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from telegram import Bot, Message

from bridge.channels.telegram.voice import VoiceGate, voice_attachment
from bridge.llm.audio import parse_transcript, transcription_form
from bridge.senses.speech import speakable
from bridge.senses.voice import read_inbox_file
from tests.fakes.ogg_opus import ogg_opus, read_ogg_opus
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
USER = 111111
TRANSCRIPT = " ".join(["remind me to water the basil on friday and buy oat milk"] * 8)


class _Sink:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.parts.append(bytes(data))


async def timed(runs: int, body: Callable[[], Awaitable[object]]) -> float:
    """Median milliseconds of `runs` calls (one warm-up call first)."""
    await body()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await body()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def form_bytes(note: bytes) -> int:
    payload = transcription_form(note, "voice.ogg", "audio/ogg", "whisper-1")()
    sink = _Sink()
    await payload.write(sink)  # type: ignore[arg-type]
    return sum(len(p) for p in sink.parts)


async def main(runs: int) -> None:
    note = ogg_opus({"TRANSCRIPT": TRANSCRIPT}, seconds=30)
    answer = ogg_opus({"SPOKEN": TRANSCRIPT}, seconds=30, seed=1)
    reply = ("The basil wants water on Friday. " * 50)[:1500]
    body = f'{{"text": "{TRANSCRIPT}", "usage": {{"type": "duration", "seconds": 30}}}}'.encode()
    print(f"voice note: 30 s, {len(note):,} bytes OGG/Opus (32 kbit/s)")
    async with FakeBotAPI(TOKEN) as fake:
        file_url = fake.base_url[: -len("bot")] + "file/bot"
        async with Bot(TOKEN, base_url=fake.base_url, base_file_url=file_url) as bot:
            with tempfile.TemporaryDirectory() as tmp:
                inbox = Path(tmp) / "inbox"
                gate = VoiceGate(inbox, 300, 20 * 1024 * 1024)
                fake.push_voice(USER, note, duration=30)
                message = Message.de_json(fake.updates[-1]["message"], bot)
                saved: list[Path] = []

                async def fetch() -> None:
                    att = await voice_attachment(bot, message, gate)
                    assert att is not None and att.path
                    saved.append(Path(att.path))

                async def read() -> None:
                    assert read_inbox_file(inbox, saved[-1], gate.max_bytes) == note

                async def send() -> None:
                    await bot.send_voice(USER, answer, filename="answer.ogg")

                async def parse() -> None:
                    parse_transcript("application/json", body)

                async def speak() -> None:
                    speakable(reply, 1500)

                async def fake_check() -> None:
                    read_ogg_opus(answer)

                figures = {
                    "fetch (getFile + download + inbox write)": await timed(runs, fetch),
                    "read (checked read from the inbox)": await timed(runs, read),
                    "form (multipart build + serialise)": await timed(
                        runs, lambda: form_bytes(note)
                    ),
                    "parse (JSON transcript)": await timed(runs, parse),
                    "speakable (1,500 chars)": await timed(runs, speak),
                    "send (sendVoice, 30 s answer)": await timed(runs, send),
                }
                check = await timed(runs, fake_check)
    figures["send (sendVoice, 30 s answer)"] -= check
    print(f"  (the fake Bot API's OGG check, {check:.3f} ms, is left out of send)")
    width = max(map(len, figures))
    for name, ms in figures.items():
        print(f"  {name:<{width}}  {ms:8.3f} ms")
    inbound = sum(v for k, v in figures.items() if not k.startswith(("send", "speakable")))
    outbound = figures["speakable (1,500 chars)"] + figures["send (sendVoice, 30 s answer)"]
    print(f"  {'in: total (fetch+read+form+parse)':<{width}}  {inbound:8.3f} ms")
    print(f"  {'out: total (speakable+send)':<{width}}  {outbound:8.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="one run (CI: it still runs)")
    args = parser.parse_args()
    asyncio.run(main(1 if args.quick else args.runs))

"""The real daemon stays responsive while one tenant's PDF bombs decode, and SIGTERM
ends it and every decoder.

`roost serve` runs as a process (web on a loopback port, the fake OpenAI server as
its model). One tenant (the page's own token) sends six PDFs whose 300 pages share
one dense content stream (seconds of parsing a page: hours for a file), each with a
message in its own chat; the report of issue 21 had six of them time out another tenant's
upload. While they decode, `/healthz` answers and another tenant (its own
`web_token`) uploads a photo and gets its turn answered, before any bomb is done.
Then SIGTERM: the daemon exits 0 and no decoder process outlives it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiohttp

from tests.fakes.fake_openai import FakeOpenAI
from tests.procs import gone
from tests.senses.hostile import dense_pdf
from tests.senses.samples import make_png
from tests.spine.test_daemon import env_for, fake, start_daemon  # noqa: F401  (fake: a fixture)

BOB = "bob-web-token-0123456789abcdef0"
BOUND_S = 120  # only to stop a hang: each step below takes well under a second when it works


def configure_bob() -> None:
    """A second tenant with its own web token, in the config file."""
    Path(os.environ["ROOST_CONFIG"]).write_text(f'[tenants.bob]\nweb_token = "{BOB}"\n')


def decoders_of(pid: int) -> list[int]:
    """Child processes of `pid` that are decoders."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(") ", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if ppid == pid and b"decode_child" in cmdline:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    return not gone(pid)


async def send_with_file(
    http: aiohttp.ClientSession,
    token: str,
    data: bytes,
    name: str,
    mime: str,
    text: str,
    chat: str = "main",
) -> tuple[int, dict[str, object]]:
    auth = {"Authorization": f"Bearer {token}"}
    form = aiohttp.FormData()
    form.add_field("file", data, filename=name, content_type=mime)
    async with http.post("/api/upload", data=form, headers=auth) as r:
        up = await r.json()
        assert r.status == 200, up
    body = {"text": text, "attachments": [up["id"]], "chat": chat}
    async with http.post("/api/chat", json=body, headers=auth) as r:
        return r.status, dict(await r.json())


async def test_the_daemon_answers_others_while_bombs_decode_and_stops_on_sigterm(
    home: Path,
    fake: FakeOpenAI,  # noqa: F811
) -> None:
    configure_bob()
    env = env_for(home, fake) | {
        "ROOST_LLM__VISION": "true",
        "ROOST_LIMITS__DECODE_SECONDS": "600",  # the bombs outlast the test
        "ROOST_LIMITS__SHUTDOWN_GRACE_S": "1",
    }
    daemon = await start_daemon(env)
    token = (home / "web-token").read_text().strip()
    bomb = dense_pdf()
    seen: set[int] = set()
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        bombs = [
            asyncio.ensure_future(
                send_with_file(http, token, bomb, f"b{n}.pdf", "application/pdf", "sum it", f"c{n}")
            )
            for n in range(6)
        ]
        async with asyncio.timeout(BOUND_S):
            while not any(t.done() for t in bombs) and len(decoders_of(daemon.proc.pid)) < 2:
                await asyncio.sleep(0.05)  # until a bomb is decoding (and a spare waits)
        seen.update(decoders_of(daemon.proc.pid))

        async with asyncio.timeout(BOUND_S):
            async with http.get("/healthz") as r:
                assert r.status == 200
            status, reply = await send_with_file(
                http, BOB, make_png(64, 48), "cat.png", "image/png", "what is this?"
            )
        assert status == 200 and reply["kind"] == "answer", reply
        assert str(reply["reply"]).startswith("echo: [image: 1 photo]")
        assert not any(t.done() for t in bombs)  # all six are still being read
        seen.update(decoders_of(daemon.proc.pid))

        code, stderr = await daemon.stop()
        await asyncio.gather(*bombs, return_exceptions=True)
    assert code == 0, stderr
    assert seen and not any(alive(pid) for pid in seen)
    assert "sum it" not in stderr and "b0.pdf" not in stderr

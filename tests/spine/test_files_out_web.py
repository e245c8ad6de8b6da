"""Files out on the web page and the terminal.

The web channel is made by the daemon's own factory over a real socket;
`/export` is the real command. A reply's file is offered as a one-time,
short-lived signed link: it downloads once without the bearer token (the
link is the credential), then never again; a forged, altered, expired or
foreign link is refused, and no link ever reaches another tenant's file,
not even through a symbolic link planted after the link was made.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr

from bridge.app.build import Roost, build
from bridge.app.channels_up import web_channel
from bridge.channels.web.channel import WebChannel
from bridge.channels.web.files import FileLinks
from bridge.core.commands import Command, CommandContext
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Final, OutFile
from tests.conftest import Clock, ScriptedBackend
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, run

TOKEN = "files-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@asynccontextmanager
async def served(
    settings: Settings, files: FileLinks | None = None
) -> AsyncIterator[tuple[aiohttp.ClientSession, Roost, WebChannel]]:
    web_settings = settings.web.model_copy(update={"port": 0, "token": SecretStr(TOKEN)})
    settings = settings.model_copy(update={"web": web_settings})
    roost = await build(settings, backend=ScriptedBackend("noted"), audit=MemoryAudit())
    web = web_channel(settings, roost, {}).channel
    assert isinstance(web, WebChannel)
    if files is not None:
        web._files = files
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
            yield http, roost, web
    finally:
        await web.stop()
        await roost.aclose()


async def chat(http: aiohttp.ClientSession, text: str) -> dict[str, Any]:
    async with http.post("/api/chat", json={"text": text}, headers=AUTH) as r:
        assert r.status == 200
        return dict(await r.json())


async def fetch(http: aiohttp.ClientSession, url: str) -> tuple[int, bytes, Any]:
    async with http.get(url) as r:
        return r.status, await r.read(), r.headers


def attach(roost: Roost, name: str, *files: OutFile) -> None:
    async def handler(ctx: CommandContext, args: str) -> Final:
        return Final("attached", "command", files)

    roost.core.commands.add(Command(name, f"/{name}", "test files", handler))


async def test_export_on_the_web_downloads_once_without_the_bearer(settings: Settings) -> None:
    async with served(settings) as (http, _, _):
        assert (await chat(http, "remember plums"))["reply"] == "noted"
        reply = await chat(http, "/export")
        assert reply["kind"] == "command" and reply["reply"].startswith("Here is everything")
        (offered,) = reply["files"]
        assert offered["mime"] == "application/zip" and offered["name"].endswith(".zip")
        status, body, headers = await fetch(http, offered["url"])  # no Authorization header
        assert status == 200 and len(body) == offered["size"]
        assert headers["Content-Disposition"].startswith("attachment; filename*=UTF-8''")
        assert headers["X-Content-Type-Options"] == "nosniff"
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            assert "Everything roost holds about tenant local" in zf.read("README.txt").decode()
            assert "remember plums" in zf.read("db/session_messages.jsonl").decode()
        status, body, _ = await fetch(http, offered["url"])
        assert status == 410 and b"already used" in body and b"PK" not in body


async def test_forged_altered_and_missing_links_are_refused(settings: Settings) -> None:
    async with served(settings) as (http, _, _):
        (offered,) = (await chat(http, "/export"))["files"]
        payload, _, mac = offered["url"].removeprefix("/files/").partition(".")
        flipped = payload[:-1] + ("A" if payload[-1] != "A" else "B")
        for url in ("/files/", "/files/x", f"/files/{flipped}.{mac}", f"/files/{payload}."):
            status, body, _ = await fetch(http, url)
            assert status == 404 and b"PK" not in body, url
        assert (await fetch(http, offered["url"]))[0] == 200  # still unspent


async def test_no_link_reaches_another_tenants_file(settings: Settings) -> None:
    async with served(settings) as (http, roost, web):
        theirs = roost.tenant_dirs("bob").workspace / "diary.txt"
        theirs.write_text("bob's diary")
        attach(roost, "steal", OutFile(theirs, "diary.txt"))
        reply = await chat(http, "/steal")
        assert "files" not in reply and "could not be attached" in reply["reply"]
        # a link bob's page could get (its own key) is not one of this page's
        bobs = FileLinks(theirs.parents[2])
        foreign = bobs.sign("global/workspace/diary.txt", "diary.txt", "text/plain")
        assert (await fetch(http, f"/files/{foreign}"))[0] == 404
        # even a link this page signed cannot climb out of its tenant's tree
        assert web._files is not None
        climb = web._files.sign("../bob/global/workspace/diary.txt", "d", "text/plain")
        status, body, _ = await fetch(http, f"/files/{climb}")
        assert status == 404 and b"diary" not in body


async def test_a_symlink_planted_after_the_link_is_refused(settings: Settings) -> None:
    async with served(settings) as (http, roost, _):
        theirs = roost.tenant_dirs("bob").workspace / "diary.txt"
        theirs.write_text("bob's diary")
        mine = roost.tenant_dirs("local").workspace / "notes.txt"
        mine.write_text("my notes")
        attach(roost, "notes", OutFile(mine, "notes.txt", "text/plain"))
        (offered,) = (await chat(http, "/notes"))["files"]
        mine.unlink()
        os.symlink(theirs, mine)
        status, body, _ = await fetch(http, offered["url"])
        assert status == 404 and b"diary" not in body


async def test_a_link_expires(settings: Settings, clock: Clock) -> None:
    async with served(settings) as (_, roost, _):
        top = roost.tenant_dirs("local").root.parent
    links = FileLinks(top, ttl_s=600, clock=clock)
    async with served(settings, links) as (http, roost, _):
        mine = roost.tenant_dirs("local").workspace / "notes.txt"
        mine.write_text("my notes")
        attach(roost, "notes", OutFile(mine, "notes.txt", "text/plain"))
        first, second = (await chat(http, "/notes"))["files"], (await chat(http, "/notes"))["files"]
        assert (await fetch(http, first[0]["url"]))[:2] == (200, b"my notes")
        clock.advance(601)
        status, body, _ = await fetch(http, second[0]["url"])
        assert status == 410 and b"expired" in body


async def test_the_stream_final_event_carries_the_files(settings: Settings) -> None:
    async with (
        served(settings) as (http, _, _),
        http.post("/api/chat/stream", json={"text": "/export"}, headers=AUTH) as r,
    ):
        text = await r.text()
    (final,) = [line for line in text.splitlines() if line.startswith("data:")][-1:]
    assert '"files": [{"name": "roost-export-local-' in final and '"url": "/files/' in final


async def test_the_terminal_prints_the_path(home: Path) -> None:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as fake:
        code, out, err = await run(["send", "--tenant", "alice", "/export"], env_for(home, fake))
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("file: ")]
    path = Path(line.removeprefix("file: ").rsplit(" (", 1)[0])
    assert path.parent == home / "tenants" / "alice" / "out"
    assert zipfile.ZipFile(path).testzip() is None

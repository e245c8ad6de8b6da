"""`/export` on the web page of a tenant that is not the local one offers its link.

A tenant with its own `web_token` ([tenants.bob]) sends `/export` on the web page
made by the daemon's own factory: the reply carries a one-time link to bob's ZIP
(before, links were signed only for the local tenant's tree, so bob's export was
made and never offered). The link downloads bob's data, not the local tenant's; a
link bob's page signs cannot climb into another tenant's tree.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import aiohttp
from pydantic import SecretStr

from bridge.app.build import build
from bridge.app.channels_up import web_channel
from bridge.channels.web.channel import WebChannel
from bridge.core.config import Settings, load_settings
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import ScriptedBackend

TOKEN = "local-page-token-0123456789ab"
BOB = "bob-page-token-0123456789abcd"


def settings_with_bob(home: Path) -> Settings:
    base = load_settings(tenants={"bob": {"web_token": BOB}})
    web = base.web.model_copy(update={"port": 0, "token": SecretStr(TOKEN)})
    return base.model_copy(update={"web": web})


async def test_a_web_tenant_of_its_own_gets_its_export_link(home: Path) -> None:
    settings = settings_with_bob(home)
    roost = await build(settings, backend=ScriptedBackend("noted"), audit=MemoryAudit())
    web = web_channel(settings, roost, {}).channel
    assert isinstance(web, WebChannel)
    await web.start()
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{web.port}") as http:
            bob = {"Authorization": f"Bearer {BOB}"}
            async with http.post("/api/chat", json={"text": "my plums"}, headers=bob) as r:
                assert r.status == 200
            async with http.post("/api/chat", json={"text": "/export"}, headers=bob) as r:
                reply = await r.json()
            assert reply["reply"].startswith("Here is everything"), reply
            (offered,) = reply["files"]
            assert offered["name"].startswith("roost-export-bob-")
            async with http.get(offered["url"]) as r:  # the link is the credential
                assert r.status == 200
                body = await r.read()
            with zipfile.ZipFile(io.BytesIO(body)) as zf:
                assert "tenant bob" in zf.read("README.txt").decode()
                assert "my plums" in zf.read("db/session_messages.jsonl").decode()
            # a link signed for bob's tree cannot climb into the local tenant's
            local = roost.tenant_dirs("local").workspace / "notes.txt"
            local.write_text("local notes")
            assert web._files is not None
            climb = web._files.sign("../local/global/workspace/notes.txt", "n", "text/plain", "bob")
            async with http.get(f"/files/{climb}") as r:
                assert r.status == 404 and b"local notes" not in await r.read()
    finally:
        await web.stop()
        await roost.aclose()

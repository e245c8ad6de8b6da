"""Every way out of roost passes one masking point: the tenant's Masker.

Three checks, each of which a new feature that bypasses the masker fails:

1. Only `bridge/loadout/mask.py` builds a `Masked` (the source tree is read:
   no other constructor call, no `cast` to it).
2. Every writer of text refuses plain `str` (`Unmasked`): the session store
   (message, steps, answer, summary), the outbox, the job store, the draft store.
3. End to end, with two vault values planted where they can enter (a
   workspace file a saved tool returns, a model answer in every spelling, the
   person's own message, a reminder, a scheduled tool job, a summary, a draft's
   source, `roost send --to`, a reply kept for the outbox, an MCP call, an
   export, an archived conversation): the ways out are enumerated, not listed
   by hand where they can be found: every text column of every table of
   roost.db, every file under the home (but the vault and the planted file),
   every member of the export ZIP, the audit chain, the log; and what left
   over the wire: each request to the model server, the streamed deltas, the
   tool progress, the web API (stream, outbox, history, conversations), the
   outbox deliveries, the MCP result. None holds any spelling of either value.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import logging
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.app.build import Roost, build
from bridge.app.schedule_loop import ScheduleLoop
from bridge.channels.web.channel import WebChannel
from bridge.cli.schedule import send_to
from bridge.core.config import load_settings
from bridge.core.sessions import SessionKey
from bridge.loadout import vault
from bridge.mcp.server import TenantTools, call_tool
from bridge.personal_tools.drafts import DraftStore
from bridge.personal_tools.source import ForgeTools
from bridge.schedule.jobs import JobStore
from bridge.schedule.outbox import OutboxStore
from bridge.schedule.runtime import recent_messages, reply_to_outbox
from bridge.schedule.service import next_run_ms
from bridge.types.backend import ChatMessage, ToolCallRequest
from bridge.types.masked import Unmasked
from bridge.types.messages import Inbound
from forge.library import build_spec
from tests.consent import keep
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls, last_user_text
from tests.masking import m
from tests.personal_tools.leakcheck import leaks, spellings
from tests.schedule.database import database_of
from tests.sessions_kit import store_on
from tests.stored_rows import table_texts

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-key-000000000000"
TOKEN = "egress-web-token-0123456789"
VALUES = {
    "bank_pin": "ghp_Eg7ressR8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0",
    "mail_pass": 'Tr0ub4dor&3 "x"/+?=\\ü',
}
PIN = VALUES["bank_pin"]
PEEK = '''
def run() -> str:
    """Read the note the person keeps in token.txt."""
    with open("token.txt") as fh:
        return fh.read()
'''
T0_MS = 1_800_000_000_000
LATER_MS = 10**13  # the scheduler's clock: every job is due


# 1. only the masker builds a Masked ---------------------------------------------------------


def _builds_masked(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name == "Masked":
        return True
    if name == "cast" and node.args:
        target = node.args[0]
        text = ast.unparse(target)
        return "Masked" in text
    return name == "__new__" and "Masked" in ast.unparse(f)


def test_only_the_masker_builds_masked_text() -> None:
    found = []
    for path in sorted((ROOT / "bridge").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if _builds_masked(node):
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    assert found and all(f.startswith("bridge/loadout/mask.py:") for f in found), found


# 2. every writer refuses plain text -----------------------------------------------------------


async def test_every_writer_of_text_refuses_plain_str(tmp_path: Path) -> None:
    key = SessionKey("local", "web", "c1")
    async with database_of(tmp_path / "roost.db") as database:
        sessions = store_on(database, 32_000, 86_400)
        call = ToolCallRequest("c1", "me__x", "{}")
        plain_steps = (ChatMessage("assistant", "", (call,)), ChatMessage("tool", "r", (), "c1"))
        spec = build_spec("num", "n", PEEK).tool
        assert spec is not None
        plain: Any = "plain text"  # a str that did not pass the masker
        drafts = DraftStore(database, lambda: 1)

        async def draft() -> None:
            await drafts.put(key, spec, plain)

        writers = {
            "session message": lambda: sessions.append(key, plain, m("a"), "m1", 1.0),
            "session answer": lambda: sessions.append(key, m("q"), plain, "m1", 1.0),
            "session steps": lambda: sessions.append(key, m("q"), m("a"), "m1", 1.0, plain_steps),
            "draft store": draft,
        }
        for name, write in writers.items():
            with pytest.raises(Unmasked):
                await write()
            stored = await database.fetch_all("SELECT * FROM session_messages")
            assert "m1" not in json.dumps(stored), name
        assert await sessions.fold_plan(key) is None  # nothing was written by any of them
        small = store_on(database, 1_000, 86_400)
        for n in range(8):
            await small.append(key, m(f"q{n} " + "x" * 100), m(f"a{n} " + "y" * 100), f"n{n}", 1.0)
        fold = await small.fold_plan(key)
        assert fold is not None
        with pytest.raises(Unmasked):
            await small.fold(key, fold, plain)  # a summary
        assert (await small.load(key, 1.0)).summary == ""
        for table in ("outbox", "jobs", "tool_drafts"):
            assert await database.fetch_value(f"SELECT COUNT(*) FROM {table}") == 0, table


async def test_the_outbox_and_the_job_store_refuse_plain_str(tmp_path: Path) -> None:
    plain: Any = "plain text"  # a str that did not pass the masker
    async with database_of(tmp_path / "roost.db") as database:
        with pytest.raises(Unmasked):
            await OutboxStore(database).enqueue("local", "web", "c1", plain, "k", now_ms=1)
        with pytest.raises(Unmasked):
            await JobStore(database, next_run_ms).create(
                tenant="local",
                channel="web",
                chat="c1",
                kind="reminder",
                spec="",
                payload=plain,
                tz="UTC",
                next_run_ms=2,
                created_ms=1,
            )
        assert await database.fetch_value("SELECT COUNT(*) FROM outbox") == 0
        assert await database.fetch_value("SELECT COUNT(*) FROM jobs") == 0


# 3. end to end: plant the values everywhere, look everywhere ------------------------------


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    """The model: it plants the vault value wherever a model could write text."""
    messages = body["messages"]
    echoed = " | ".join(f for v in VALUES.values() for f in spellings(v).values())
    if str(messages[0]["content"]).startswith("You condense"):  # a summary
        return Text(f"Summary: the pin is {PIN}. " + last_user_text(body)[-300:])
    if messages[-1]["role"] == "tool":
        return Text(f"The file says {PIN}. Also: {echoed}", pieces=None)
    said = last_user_text(body)
    if said.startswith("write peek"):
        return ToolCalls(
            [Call("forge_create", {"name": "peek", "description": "", "source": PEEK})]
        )
    if said.startswith("peek now"):
        return ToolCalls([Call("me__peek", {})])
    if said.startswith("draft it"):
        source = PEEK.replace("token.txt", PIN)
        args = {"name": "leaky", "description": f"uses {PIN}", "source": source}
        return ToolCalls([Call("forge_create", args)])
    if said.startswith("say it"):
        text = f"Here: {echoed}"
        return Text(text, pieces=[text[i : i + 3] for i in range(0, len(text), 3)])
    return Text("Noted. " + "filler " * 40)


@pytest.fixture
async def planted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Roost, FakeOpenAI, WebChannel]]:
    async with FakeOpenAI(api_key=KEY, models=["m1"], responder=respond) as fake:
        for name, value in (
            ("ROOST_LLM__BASE_URL", fake.base_url),
            ("ROOST_LLM__API_KEY", KEY),
            ("ROOST_LLM__MODEL", "m1"),
            ("ROOST_LLM__MAX_RETRIES", "0"),
            ("ROOST_LIMITS__SESSION_CHARS", "1500"),  # a few turns, then a summary
        ):
            monkeypatch.setenv(name, value)
        roost = await build(load_settings())
        web = WebChannel(
            roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0,
            recent=lambda chat, after: recent_messages(roost.database, "local", "web", chat, after),
            turns=roost.core.running, archive=roost.sessions.archive,
        )  # fmt: skip
        await web.start()
        try:
            yield roost, fake, web
        finally:
            await web.stop()
            await roost.aclose()


def everything_stored(home: Path) -> dict[str, str]:
    """Every way a text is kept: each table's text columns, each file, each export member."""
    out: dict[str, str] = {}
    for table, texts in table_texts(home / "roost.db").items():
        out[f"table {table}"] = "\n".join(texts)
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        rel = path.relative_to(home).as_posix()
        if "/global/vault/" in rel or rel.endswith("/workspace/token.txt"):
            continue  # the values' own home, and the file the person put one in
        data = path.read_bytes()
        out[f"file {rel}"] = data.decode("utf-8", "replace")
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    out[f"zip {rel}:{name}"] = zf.read(name).decode("utf-8", "replace")
    return out


async def test_no_way_out_carries_a_vault_value(
    planted: tuple[Roost, FakeOpenAI, WebChannel],
    home: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    roost, fake, web = planted
    dirs = roost.tenant_dirs("local")
    for name, value in VALUES.items():
        vault.set_value(dirs, name, value)
    (dirs.workspace / "token.txt").write_text(f"pin {PIN} / pass {VALUES['mail_pass']}\n")
    sent: list[str] = []  # every text that left toward a person, a client or a store

    async def say(text: str, chat: str = "c1") -> None:
        deltas: list[str] = []

        async def on_delta(piece: str) -> None:
            deltas.append(piece)

        async def on_progress(step: object) -> None:
            sent.append(repr(step))

        final = await roost.core.handle(
            Inbound("web", "local", chat, text, f"m{len(sent)}"), on_delta, on_progress
        )
        sent.extend([final.text, "".join(deltas), *(a.command for a in final.actions)])

    await say("write peek")  # a saved tool that returns the person's file
    offer = await roost.core.handle(Inbound("web", "local", "c1", "/tool save peek", "s1"))
    done = await keep(lambda t: roost.core.handle(Inbound("web", "local", "c1", t, "s2")), "peek")
    sent += [offer.text, done.text]
    await say("peek now")  # a tool result, and a model answer naming the value
    await say(f"my bank pin is {PIN}, keep it in mind")  # the person's own message
    await say("draft it")  # a draft whose description and source hold the value
    await say(f"/remind in 1m call the bank, pin {PIN}")  # a reminder's text
    await say("/every 1h me.peek always")  # a scheduled tool job
    await say(f"/remember my bank pin is {PIN}")  # refused by the memory screen
    await say("/jobs")
    await say("/tools")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    base = f"http://127.0.0.1:{web.port}"
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/api/chat/stream", json={"text": "say it"}, headers=auth) as r:
            sent.append(await r.text())  # deltas, tool events and the final, as the page reads

        # the scheduler runs both jobs (a minute later) and delivers to the web page
        loop = ScheduleLoop(roost, clock=lambda: LATER_MS)
        delivered: list[str] = []

        async def deliver(entry: Any) -> None:
            delivered.append(entry.text)

        loop.deliveries.add("web", deliver)
        await loop.scheduler.tick()
        await loop.scheduler.tick()
        jobs = [(j.kind, j.last_error) for j in await roost.schedule.jobs.list_jobs("local")]
        assert len(delivered) >= 2, (delivered, jobs)
        sent += delivered

        # roost send --to, and a final reply a channel could not deliver
        args = argparse.Namespace(to="web:c1", text=[f"from a script: {PIN}"], key=None,
                                  tenant=None)  # fmt: skip
        assert await asyncio.to_thread(send_to, args, roost.settings) == 0  # its own loop
        hook = reply_to_outbox(
            roost.schedule.outbox, roost.resolver.resolve, lambda: None, lambda: T0_MS,
            lambda tenant: roost.loadout.vault.masker(roost.tenant_dirs(tenant)),
        )  # fmt: skip
        assert await hook(Inbound("web", "local", "c1", "q", "lost"), f"the answer {PIN}")

        for n in range(6):  # the session folds into a summary (the model plants the value)
            await say(f"tell me more {n}")
            await roost.compactor.idle()
        assert (await roost.sessions.load(SessionKey("local", "web", "c1"), 0)).summary

        for path in ("/api/outbox?chat=c1", "/api/history?chat=c1", "/api/conversations?chat=c1"):
            async with http.get(base + path, headers=auth) as r:
                assert r.status == 200, path
                sent.append(await r.text())
        assert "from a script" in sent[-3] and "the answer" in sent[-3]

        await say("/export")
        await say("/reset")
        async with http.get(f"{base}/api/conversations?chat=c1", headers=auth) as r:
            listed = (await r.json())["conversations"]
        archived = next(c["id"] for c in listed if not c["current"])
        async with http.get(
            f"{base}/api/history?chat=c1&conversation={archived}", headers=auth
        ) as r:
            sent.append(await r.text())

    source = next(s for s in roost.tool_sources if isinstance(s, ForgeTools))
    masks = roost.loadout.vault.masker
    mcp = await call_tool(TenantTools(dirs, source, lambda d: masks(d).mask), "me__peek", {})
    sent.append(mcp.model_dump_json())

    # the values really were there to leak
    assert "[vault:bank_pin]" in json.dumps(fake.requests)
    assert any("[vault:bank_pin]" in s for s in delivered)
    stored = everything_stored(home)
    assert any(k.startswith("zip ") for k in stored), "no export was written"
    assert any(k == "table tool_drafts" and "[vault:bank_pin]" in v for k, v in stored.items())

    found = {
        "model requests": leaks(json.dumps(fake.requests, ensure_ascii=False), VALUES),
        "model requests (ascii)": leaks(json.dumps(fake.requests), VALUES),
        "sent": leaks("\n".join(sent), VALUES),
        "log": leaks(caplog.text, VALUES),
        **{where: leaks(text, VALUES) for where, text in stored.items()},
    }
    leaked = {where: sorted(kinds)[:3] for where, kinds in found.items() if kinds}
    assert not leaked, leaked

"""Stopping, attaching to and following a running answer on the web, for real:
the web channel of the daemon's factory, the real core, a fake OpenAI server
that holds its stream open until told, and the real sandbox.

Stop cancels on the server (the model connection is closed, a running tool's
process dies), keeps the partial answer marked, audits it, and the next
message runs at once; a page that goes away is stopped after the grace
period; a reload attaches to the running answer; the stream tells tool
steps, retries and the model.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiohttp

from bridge.audit.verify import tail
from tests.fakes.fake_openai import Call, Status, Text, ToolCalls
from tests.procs import gone
from tests.spine.test_web_history import (
    AS_ALICE,
    AS_BOB,
    Events,
    Site,
    chat,
    get,
    post,
    served,
)
from tests.waits import HANG_S

GUARD_S = HANG_S  # only a guard against hanging; no test measures time
WORDS = " ".join(f"word{n}" for n in range(40))


async def stream(site: Site, text: str, chat_id: str = "c") -> Events:
    response = await site.http.post(
        "/api/chat/stream", json={"text": text, "chat": chat_id}, headers=AS_ALICE
    )
    assert response.status == 200
    return Events(response)


def failed_kinds(home: Path) -> list[str]:
    return [
        r["details"]["kind"] for r in tail(home / "audit" / "chain.jsonl", 50, "message.failed")
    ]


async def test_stop_mid_answer_closes_the_model_stream_and_keeps_the_partial(home: Path) -> None:
    async with served(home) as site, asyncio.timeout(GUARD_S):
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 4  # the role chunk and three words, then the server waits
        events = await stream(site, "tell me a long story")
        await site.fake.holding.wait()
        while "word2" not in events.text():
            assert await events.next() is not None
        _, page = await get(site, "/api/history?chat=c")
        assert page["running"] is True and page["pending"]["text"] == "tell me a long story"

        assert await post(site, "/api/chat/stop", {"chat": "c"}) == {
            "stopped": True,
            "where": "here",
        }
        await site.fake.closed.wait()  # the model request was aborted
        final = await events.until("final")
        assert final["kind"] == "stopped"
        assert final["text"] == "word0 word1 word2 … [stopped]"
        assert await post(site, "/api/chat/stop", {"chat": "c"}) == {
            "stopped": False,
            "where": "nowhere",
        }

        # the next message runs at once (the held stream is never released)
        site.fake.hold_after = None
        assert await chat(site, "are you there?") == "echo: are you there?"
        sent = site.fake.user_texts()
        assert "tell me a long story" in sent
        _, page = await get(site, "/api/history?chat=c")
        shown = [(m["role"], m["text"], m["status"]) for m in page["messages"]]
        assert shown == [
            ("user", "tell me a long story", "done"),
            ("assistant", "word0 word1 word2", "stopped"),  # marked once: by its status
            ("user", "are you there?", "done"),
            ("assistant", "echo: are you there?", "done"),
        ]
        assert page["running"] is False and "pending" not in page
    assert failed_kinds(home) == ["stopped"]


def alive_pid(pid: int) -> bool:
    return not gone(pid)


def tree(root: int) -> set[int]:
    """`root` and every live process below it (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X"):
                parents[int(entry)] = int(fields[1])
    found, todo = {root} & set(parents), [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, parent in parents.items() if parent == pid]
        found.update(kids)
        todo.extend(kids)
    return found


SPIN = '''def run() -> int:
    """Count for ever."""
    n = 0
    while True:
        n += 1
    return n
'''


async def test_stop_during_a_running_sandbox_tool_kills_its_process(home: Path) -> None:
    async with served(home) as site, asyncio.timeout(GUARD_S):
        site.fake.script(
            ToolCalls([Call("forge_create", {"name": "spin", "description": "d", "source": SPIN})]),
            ToolCalls([Call("draft__spin", {})]),
            Text("never asked"),
        )
        events = await stream(site, "spin please")
        while True:
            event = await events.until("tool")
            if event["name"] == "draft__spin" and event["state"] == "start":
                break
        spinning: set[int] = set()
        while len(spinning) < 3:  # the helper, its zygote and the tool's own process
            await asyncio.sleep(0.05)
            helper = site.roost.runner.helper_pid()
            spinning = await asyncio.to_thread(tree, helper) if helper is not None else set()

        assert await post(site, "/api/chat/stop", {"chat": "c"}) == {
            "stopped": True,
            "where": "here",
        }
        final = await events.until("final")
        assert final["kind"] == "stopped"
        assert final["text"] == (  # the draft written before the stop is said, with its save
            "[stopped]\n\n🔧 Draft spin written (v1): vault secrets: none; network hosts: "
            "none. Keep it: /tool save spin"
        )
        while alive := {p for p in spinning if alive_pid(p)}:
            await asyncio.sleep(0.05)  # killed: gone soon (the guard fails the test if not)
        assert not alive
        tools = [d for e, d in events.seen if e == "tool"]
        assert [(t["name"], t["state"]) for t in tools] == [
            ("forge_create", "start"),
            ("forge_create", "done"),
            ("draft__spin", "start"),
        ]
        assert site.fake.pending == 1  # the model was not asked again
        assert await chat(site, "still fine?") == "never asked"
    assert failed_kinds(home) == ["stopped"]


async def test_attach_replays_the_text_so_far_then_follows(home: Path) -> None:
    async with served(home) as site, asyncio.timeout(GUARD_S):
        status, _ = await get(site, "/api/chat/attach?chat=c")
        assert status == 204  # nothing runs
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 6
        first = await stream(site, "a long one")
        await site.fake.holding.wait()
        while "word4" not in first.text():
            assert await first.next() is not None

        response = await site.http.get("/api/chat/attach?chat=c", headers=AS_ALICE)
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        attached = Events(response)
        replay = await attached.next()
        assert replay == ("delta", {"text": first.text()})
        assert first.text() == "word0 word1 word2 word3 word4 "
        status, _ = await get(site, "/api/chat/attach?chat=c", AS_BOB)
        assert status == 204  # bob's chat c runs nothing; alice's is not his to see

        site.fake.release.set()
        seen = await attached.rest()
        final = seen[-1]
        assert final[0] == "final" and final[1]["text"] == WORDS and final[1]["kind"] == "answer"
        assert attached.text() == WORDS
        assert (await first.until("final"))["text"] == WORDS


async def test_a_page_that_goes_away_is_stopped_after_the_grace(home: Path) -> None:
    async with served(home, grace_s=0.2) as site, asyncio.timeout(GUARD_S):
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 3
        async with aiohttp.ClientSession(f"http://127.0.0.1:{site.web.port}") as other:
            response = await other.post(
                "/api/chat/stream", json={"text": "then I leave", "chat": "c"}, headers=AS_ALICE
            )
            page = Events(response)
            await site.fake.holding.wait()
            await page.until("delta")
            response.close()  # the tab is closed
        await site.fake.closed.wait()  # nobody came back: the model request is aborted
        while (await get(site, "/api/history?chat=c"))[1]["running"]:
            await asyncio.sleep(0.05)
        _, history = await get(site, "/api/history?chat=c")
        assert [m["status"] for m in history["messages"]] == ["done", "stopped"]
    assert failed_kinds(home) == ["stopped"]


async def test_a_page_that_comes_back_in_time_keeps_the_answer(home: Path) -> None:
    async with served(home, grace_s=3600) as site, asyncio.timeout(GUARD_S):
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 3
        async with aiohttp.ClientSession(f"http://127.0.0.1:{site.web.port}") as other:
            response = await other.post(
                "/api/chat/stream", json={"text": "reload", "chat": "c"}, headers=AS_ALICE
            )
            await Events(response).until("delta")
            response.close()  # a reload: the old stream goes ...
        attached = Events(await site.http.get("/api/chat/attach?chat=c", headers=AS_ALICE))
        assert (await attached.next() or ("", {}))[0] == "delta"  # ... and the new one attaches
        site.fake.release.set()
        seen = await attached.rest()
        assert seen[-1][0] == "final" and seen[-1][1]["text"] == WORDS
        assert not site.fake.closed.is_set()
    assert failed_kinds(home) == []


async def test_bob_cannot_stop_alices_turn(home: Path) -> None:
    async with served(home) as site, asyncio.timeout(GUARD_S):
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 3
        events = await stream(site, "mine")
        await site.fake.holding.wait()
        assert await post(site, "/api/chat/stop", {"chat": "c"}, AS_BOB) == {
            "stopped": False,
            "where": "nowhere",
        }
        new = await post(site, "/api/chat/new", {"chat": "c"}, AS_BOB)
        assert isinstance(new["conversation"], int)
        site.fake.release.set()
        final = await events.until("final")
        assert final["kind"] == "answer" and final["text"] == WORDS
        assert not site.fake.closed.is_set()


async def test_the_stream_tells_the_model_retries_and_tool_steps(home: Path) -> None:
    bad_tool = "import subprocess\ndef run() -> str:\n    '''x'''\n    return subprocess.__name__\n"
    async with served(home) as site, asyncio.timeout(GUARD_S):
        site.fake.script(
            Status(429, retry_after=0),
            ToolCalls(
                [Call("memory_read", {"name": "nothing-here"}, id="call_1")],
            ),
            ToolCalls(
                [Call("forge_create", {"name": "bad", "description": "d", "source": bad_tool})]
            ),
            Text("all done"),
        )
        events = await stream(site, "go")
        seen = await events.rest()
        names = [e for e, _ in seen]
        assert names[0] == "info" and seen[0][1] == {"model": "openai model=m"}
        retry = next(d for e, d in seen if e == "retry")
        assert retry == {"attempt": 1, "max": 3, "reason": "the model server is busy (HTTP 429)"}
        tools = [d for e, d in seen if e == "tool"]
        assert [(t["name"], t["state"]) for t in tools] == [
            ("memory_read", "start"),
            ("memory_read", "error"),
            ("forge_create", "start"),
            ("forge_create", "error"),
        ]
        assert tools[0] == {
            "id": "call_1",
            "name": "memory_read",
            "state": "start",
            "args": '{"name": "nothing-here"}',
        }
        assert tools[1]["result"].startswith("error:") and tools[1]["ms"] >= 0
        assert "not accepted" in tools[3]["result"] and "subprocess" in tools[3]["result"]
        assert seen[-1][0] == "final" and seen[-1][1]["text"].startswith("all done")


async def test_a_waiting_plain_request_keeps_its_turn_when_an_attached_page_leaves(
    home: Path,
) -> None:
    async with served(home, grace_s=0.1) as site, asyncio.timeout(GUARD_S):
        site.fake.script(Text(WORDS))
        site.fake.hold_after = 3
        plain = asyncio.create_task(chat(site, "no stream for me"))
        await site.fake.holding.wait()
        async with aiohttp.ClientSession(f"http://127.0.0.1:{site.web.port}") as other:
            response = await other.get("/api/chat/attach?chat=c", headers=AS_ALICE)
            await Events(response).next()
            response.close()  # a page attached and left: the plain request still waits
        await asyncio.sleep(2.0)  # past WATCH_S and the grace (a stop would come by then)
        site.fake.release.set()
        assert await plain == WORDS
        assert not site.fake.closed.is_set()

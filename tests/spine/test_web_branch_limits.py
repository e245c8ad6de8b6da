"""Edit and regenerate streams count against the stream caps and end when their token goes.

`POST /api/chat/edit` and `/api/chat/regenerate` answer with an event stream
like `/api/chat/stream`; before, they held no stream slot: one token opened 12
of them (the cap is 8 per page token) and, after a reload removed the token,
every one still ran and delivered its answer to the revoked holder. The same
for `POST /api/chat`, which waits for its answer without a stream. Through
the real app (`test_web_chats.served`), the fake model holding each answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from tests.spine.test_web_chats import served
from tests.spine.test_web_history import AS_BOB, Site, chat, get
from tests.waits import HANG_S, until

CAP = 8  # [web] streams_per_token, the default


async def first_seq(site: Site, chat_id: str) -> int:
    _, page = await get(site, f"/api/history?chat={chat_id}", AS_BOB)
    return int(next(m["seq"] for m in page["messages"] if m["role"] == "user"))


async def until_closed(response: aiohttp.ClientResponse) -> bytes:
    """What the stream said before the server closed it (cut mid-stream, not ended)."""
    said = b""
    try:
        while chunk := await response.content.readany():
            said += chunk
    except aiohttp.ClientPayloadError:
        pass
    return said


async def test_regenerate_and_edit_streams_are_capped_and_end_with_their_token(
    home: Path,
) -> None:
    async with served(home) as site:
        seqs = []
        for i in range(CAP + 1):
            await chat(site, f"hello {i}", AS_BOB, chat=f"c{i}")
            seqs.append(await first_seq(site, f"c{i}"))
        site.fake.hold_after = 1
        opened: list[aiohttp.ClientResponse] = []
        try:
            for i in range(CAP):
                path, body = (
                    ("/api/chat/edit", {"chat": f"c{i}", "seq": seqs[i], "text": "again"})
                    if i % 2
                    else ("/api/chat/regenerate", {"chat": f"c{i}", "seq": seqs[i]})
                )
                opened.append(await site.http.post(path, json=body, headers=AS_BOB))
                assert opened[-1].status == 200, await opened[-1].text()
            past = {"chat": f"c{CAP}", "seq": seqs[CAP]}
            async with site.http.post("/api/chat/regenerate", json=past, headers=AS_BOB) as r:
                said = await r.json()
                assert r.status == 429 and "too many open event streams" in said["error"]
            stream = {"text": "one more", "chat": "z"}
            async with site.http.post("/api/chat/stream", json=stream, headers=AS_BOB) as r:
                assert r.status == 429  # the same slots as every other stream
            site.web.set_tenant_tokens({})  # a reload removes bob's token: his streams end
            for response in opened:
                said = await until_closed(response)
                assert b"event: final" not in said
            assert site.web.streams.count("bob") == 0
        finally:
            site.fake.release.set()
            for response in opened:
                response.close()


async def test_waiting_chat_requests_are_not_capped_but_cut_with_their_token(
    home: Path,
) -> None:
    """`POST /api/chat` is an API client's: more turns at once than a page's streams
    (the benches run 10 and 100 clients on one token), each ended with its token."""
    async with served(home) as site:
        site.fake.hold_after = 1

        async def asked(i: int) -> int | str:
            body = {"text": f"question {i}", "chat": f"c{i}"}
            try:
                async with site.http.post("/api/chat", json=body, headers=AS_BOB) as r:
                    return r.status if r.status != 200 else str((await r.json())["reply"])
            except aiohttp.ClientError:
                return "cut"

        many = CAP + 4
        waiting = [asyncio.create_task(asked(i)) for i in range(many)]
        try:
            await until(lambda: site.web.streams.waiting("bob") == many, "every request waiting")
            assert site.web.streams.count("bob") == 0  # no page stream's place taken
            site.web.set_tenant_tokens({})  # a reload removes bob's token
            said = await asyncio.wait_for(asyncio.gather(*waiting), HANG_S)
            assert said == ["cut"] * many  # no answer reached the revoked holder
            assert site.web.streams.waiting("bob") == 0
        finally:
            site.fake.release.set()
            for task in waiting:
                task.cancel()

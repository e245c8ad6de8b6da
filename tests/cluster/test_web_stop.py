"""Stop reaches the instance that runs the web answer (two real `roost serve` on one home).

A web turn runs where its request arrived (instance A, under the chat's
lease); the person's Stop goes through a load balancer to instance B. B asks
A through the database's notify (bridge/channels/web/relay.py): A's turn is
stopped as on one instance (the model's stream is closed, the stream ends
with the stopped answer, the session keeps it marked, A's audit chain says
`stopped`) and the next message runs at once. Another tenant's Stop for the
same chat id stops nothing; a Stop after the turn ended does nothing; New
chat on B stops A's answer before it resets the chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.audit.verify import tail
from tests.cluster.kit import KEY, WEB_TOKEN, Cluster, ClusterOf, Instance
from tests.fakes.fake_openai import Text
from tests.spine.test_web_history import Events, SlowOpenAI
from tests.waits import HANG_S

BOB = "bob-cluster-token-0123456789abcdef"
AS_LOCAL = {"Authorization": f"Bearer {WEB_TOKEN}"}
AS_BOB = {"Authorization": f"Bearer {BOB}"}
WORDS = " ".join(f"word{n}" for n in range(40))


@pytest.fixture
async def model() -> AsyncIterator[SlowOpenAI]:
    """The cluster's model (overrides tests/cluster/conftest.py): one that can hold its
    answer after a few words, as a slow model does."""
    fake = SlowOpenAI()
    fake.api_key, fake.models = KEY, ["m1"]
    async with fake:
        yield fake


async def post(cluster: Cluster, inst: Instance, path: str, body: Any, auth: Any) -> Any:
    url = f"http://127.0.0.1:{inst.port}{path}"
    async with cluster.http.post(url, json=body, headers=auth) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def get(cluster: Cluster, inst: Instance, path: str, auth: Any) -> Any:
    async with cluster.http.get(f"http://127.0.0.1:{inst.port}{path}", headers=auth) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def held_answer(cluster: Cluster, model: SlowOpenAI, inst: Instance) -> tuple[Any, Events]:
    """The local person's story asked on `inst` (chat "shared"), its stream read until the
    model holds its answer after a few words: (the response, its events)."""
    model.script(Text(WORDS))
    model.hold_after = 4  # the role chunk and three words, then the model waits
    url = f"http://127.0.0.1:{inst.port}/api/chat/stream"
    body = {"text": "tell me a long story", "chat": "shared"}
    response = await cluster.http.post(url, json=body, headers=AS_LOCAL)
    assert response.status == 200
    events = Events(response)
    await model.holding.wait()
    while "word2" not in events.text():
        assert await events.next() is not None
    return response, events


def failed_kinds(cluster: Cluster, inst: Instance) -> list[str]:
    chain = cluster.home / "audit" / f"chain-{inst.name}.jsonl"
    return [r["details"]["kind"] for r in tail(chain, 50, "message.failed")]


async def test_stop_sent_to_another_instance_stops_the_turn_where_it_runs(
    cluster_of: ClusterOf, model: SlowOpenAI
) -> None:
    cluster = cluster_of()
    config = cluster.config.read_text()
    cluster.config.write_text(f'{config}[tenants.bob]\nweb_token = "{BOB}"\n')
    a, b = await asyncio.gather(cluster.launch("a"), cluster.launch("b"))
    async with asyncio.timeout(HANG_S):
        response, events = await held_answer(cluster, model, a)
        url = f"http://127.0.0.1:{a.port}/api/chat/stream"

        # another person's Stop of a chat with the same id reaches nothing of this one
        for inst in (b, a):
            got = await post(cluster, inst, "/api/chat/stop", {"chat": "shared"}, AS_BOB)
            assert got["stopped"] is False
            assert got.get("where", "nowhere") == "nowhere"  # main has no "where"
        assert not model.closed.is_set()

        got = await post(cluster, b, "/api/chat/stop", {"chat": "shared"}, AS_LOCAL)
        assert got["stopped"] is True  # on main: False, the turn ran on
        assert got["where"] == "elsewhere"
        await model.closed.wait()  # A dropped the model's stream
        final = await events.until("final")
        assert final["kind"] == "stopped"
        assert final["text"] == "word0 word1 word2 … [stopped]"
        response.close()

        # the turn has ended: a Stop on either instance does nothing
        for inst in (b, a):
            got = await post(cluster, inst, "/api/chat/stop", {"chat": "shared"}, AS_LOCAL)
            assert got == {"stopped": False, "where": "nowhere"}
        model.hold_after = None
        reply = await post(
            cluster, b, "/api/chat", {"text": "still there?", "chat": "shared"}, AS_LOCAL
        )
        assert reply["reply"] == "echo: still there?"

        page = await get(cluster, b, "/api/history?chat=shared", AS_LOCAL)
        shown = [(m["role"], m["text"], m["status"]) for m in page["messages"]]
        assert shown == [
            ("user", "tell me a long story", "done"),
            ("assistant", "word0 word1 word2", "stopped"),  # stored "… [stopped]"
            ("user", "still there?", "done"),
            ("assistant", "echo: still there?", "done"),
        ]
        bobs = await get(cluster, b, "/api/history?chat=shared", AS_BOB)
        assert bobs["messages"] == []

        # New chat on B while A answers: A's answer is stopped, then B resets the chat
        model.holding.clear()
        model.script(Text(WORDS))
        model.hold_after = 4
        body = {"text": "another story", "chat": "shared"}
        response = await cluster.http.post(url, json=body, headers=AS_LOCAL)
        events = Events(response)
        await model.holding.wait()
        fresh = await post(cluster, b, "/api/chat/new", {"chat": "shared"}, AS_LOCAL)
        assert fresh["conversation"] != page["conversation"]
        final = await events.until("final")
        assert final["kind"] == "stopped"
        response.close()
    assert failed_kinds(cluster, a) == ["stopped", "stopped"]
    assert failed_kinds(cluster, b) == []
    for inst in (a, b):
        assert await cluster.stop(inst) == 0, inst.stderr()[-3000:]
    assert "relayed stop of chat:web:local:shared: stopped" in a.stderr()

"""A page reloaded mid-answer follows it from another instance (two real `roost serve`).

The answer runs on instance A (its stream, the chat's lease); the reload's
`GET /api/history` and `GET /api/chat/attach` go through a load balancer to
instance B, which does not run it. B's history says `running` (so the page
attaches); B keeps the event stream open until A's turn ends and then
sends the answer A stored; meanwhile A, whose own stream is gone, does not
stop the turn after `[web] detach_grace_s` (set short here), since B marks
the chat watched (bridge/channels/web/follow.py). Another tenant's attach
for the same chat id on B gets 204 (its history: not running), as does an
attach once nothing runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.cluster.kit import ClusterOf, Instance
from tests.cluster.test_web_stop import (
    AS_BOB,
    AS_LOCAL,
    BOB,
    WORDS,
    failed_kinds,
    get,
    held_answer,
    model,
)
from tests.spine.test_web_history import Events, SlowOpenAI
from tests.waits import HANG_S, until

__all__ = ["model"]  # the held model answer of test_web_stop.py, as this file's fixture
KEPT = "turn of chat:web:local:shared kept: followed from another instance"


def kept_or_stopped(a: Instance, model: SlowOpenAI) -> bool:
    """A kept the turn for two grace periods past, or stopped it (as main does)."""
    return a.stderr().count(KEPT) >= 2 or model.closed.is_set()


async def test_attach_on_another_instance_follows_the_turn_to_its_end(
    cluster_of: ClusterOf, model: SlowOpenAI
) -> None:
    cluster = cluster_of(extra={"ROOST_WEB__DETACH_GRACE_S": "0.2"})
    config = cluster.config.read_text()
    cluster.config.write_text(f'{config}[tenants.bob]\nweb_token = "{BOB}"\n')
    a, b = await asyncio.gather(cluster.launch("a"), cluster.launch("b"))

    async def attach(auth: Any) -> Any:
        url = f"http://127.0.0.1:{b.port}/api/chat/attach?chat=shared"
        return await cluster.http.get(url, headers=auth)

    async with asyncio.timeout(HANG_S):
        response, _ = await held_answer(cluster, model, a)  # A's stream, held

        page = await get(cluster, b, "/api/history?chat=shared", AS_LOCAL)
        assert page["running"] is True  # the page attaches (on main: false, it did not)
        assert (await get(cluster, b, "/api/history?chat=shared", AS_BOB))["running"] is False
        bobs = await attach(AS_BOB)  # another person's chat of the same id: nothing runs
        assert bobs.status == 204
        followed = await attach(AS_LOCAL)
        assert followed.status == 200  # on main: 204, the page lost the answer
        assert followed.headers["Content-Type"].startswith("text/event-stream")
        final = asyncio.create_task(Events(followed).until("final"))

        response.close()  # the page on A goes; B's follower keeps the turn
        await until(lambda: kept_or_stopped(a, model), "A kept or stopped the turn")
        assert not model.closed.is_set()  # on main: stopped after the grace period
        model.release.set()
        assert await final == {"text": WORDS, "kind": "answer"}
        followed.close()
        again = await attach(AS_LOCAL)
        assert again.status == 204  # nothing runs anywhere now

    assert failed_kinds(cluster, a) == []
    for inst in (a, b):
        assert await cluster.stop(inst) == 0, inst.stderr()[-3000:]

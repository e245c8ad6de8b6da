"""The fake Bot API's `quiet` is true only once every call a client wrote took effect.

A killed daemon's last call may still be on its way in: in the listen backlog, in
the task asyncio accepts it with, or in a handler. A test that heals a failure
after `quiet` (test_durable_daemon's kill -9 case) must not see that call succeed
later: it once answered a question twice in CI.
"""

from __future__ import annotations

import asyncio
import json
import socket

from tests.telegram.conftest import ALICE, TOKEN
from tests.telegram.fake_bot_api import Failure, FakeBotAPI
from tests.waits import until


def written_and_gone(port: int, text: str) -> None:
    """A whole sendMessage written on a fresh connection, then the client gone,
    without giving the loop a turn (a blocking socket: as a killed process leaves it)."""
    body = json.dumps({"chat_id": ALICE, "text": text}).encode()
    head = (
        f"POST /bot{TOKEN}/sendMessage HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + body)


async def test_quiet_holds_only_once_a_dead_clients_call_took_effect() -> None:
    async with FakeBotAPI(TOKEN) as fake:
        fake.fail("sendMessage", *[Failure.bad_gateway()] * 100)
        for turns in range(10):  # the call caught at every step of its way in
            text = f"late {turns}"
            written_and_gone(fake.port, text)
            for _ in range(turns):
                await asyncio.sleep(0)
            if await fake.quiet():
                assert text in {c.params.get("text") for c in fake.calls_of("sendMessage")}
        await until(fake.quiet, "the late calls handled")
        assert len(fake.calls_of("sendMessage")) == 10
        fake.heal("sendMessage")
        assert fake.sent_to(ALICE) == []  # each failed, none took effect after the heal

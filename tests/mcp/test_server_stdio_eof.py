"""`roost mcp` over stdio answers every request read before the client closed stdin.

A client that writes its requests and closes its end at once (`printf ... | roost
mcp`) lost the last answers: the SDK's loop ended at the end of stdin and cancelled
the handlers still running (bridge/mcp/eof.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from bridge.mcp.eof import answered_first
from tests.mcp.conftest import REPO, roost_env
from tests.mcp.test_server_http import INIT
from tests.waits import HANG_S

REQUESTS = [
    INIT,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": "three", "method": "tools/list"},
]


def test_requests_written_with_stdin_closed_are_all_answered(home: Path, config: Path) -> None:
    piped = b"".join(json.dumps(r).encode() + b"\n" for r in REQUESTS)
    for _ in range(3):  # each run lost an answer more often than not before
        run = subprocess.run(
            [sys.executable, "-m", "bridge.cli.main", "mcp", "--tenant", "alice"],
            input=piped,
            capture_output=True,
            env=roost_env(home, config),
            cwd=REPO,
            timeout=HANG_S,
        )
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        answers = [json.loads(line) for line in run.stdout.decode().splitlines()]
        assert [a["id"] for a in answers] == [1, 2, "three"]
        assert all("result" in a for a in answers)


def _request(ident: int | str) -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=ident, method="tools/list"))


def _cancel(ident: int | str) -> SessionMessage:
    note = types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": ident}
    )
    return SessionMessage(note)


def _answer(ident: int | str) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=ident, result={}))


async def _ended(items: list[SessionMessage], wait_s: float, answer: list[int | str]) -> bool:
    """Feed `items` then the end; the server side reads all, answers `answer`; whether the
    read side reported its end within `wait_s` (its grace is far longer)."""
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](10)
    for item in items:
        await send.send(item)
    send.close()
    read, write = answered_first(receive, out_send, grace_s=3_600.0)
    got = [item async for item in _until_end(read, len(items))]
    assert got == items
    for ident in answer:
        await write.send(_answer(ident))
    with anyio.move_on_after(wait_s) as scope:
        with pytest.raises(anyio.EndOfStream):
            await read.receive()
    for stream in (receive, out_send, out_receive):
        stream.close()
    return not scope.cancelled_caught


async def _until_end(read: object, n: int):  # type: ignore[no-untyped-def]
    for _ in range(n):
        yield await read.receive()  # type: ignore[attr-defined]


async def test_the_end_waits_for_answers_and_cancelled_requests_are_not_owed() -> None:
    assert await _ended([_request(1), _request("b")], HANG_S, [1, "b"])  # all answered
    assert await _ended([_request(1), _cancel(1)], HANG_S, [])  # cancelled: not owed
    assert not await _ended([_request(1), _request(2)], 0.2, [1])  # one still owed: no end


async def test_an_answer_never_sent_holds_the_end_only_for_the_grace() -> None:
    send, receive = anyio.create_memory_object_stream[SessionMessage](1)
    await send.send(_request(7))
    send.close()
    read, _ = answered_first(receive, None, grace_s=0.05)
    assert await read.receive() == _request(7)
    with pytest.raises(anyio.EndOfStream):
        await read.receive()  # returns once the grace is over (fails by hanging if not)
    receive.close()

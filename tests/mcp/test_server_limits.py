"""`roost mcp --http` under a flood: connections and tool calls are capped, nobody is locked out.

Against the real `roost mcp --tenant alice --http 127.0.0.1:0` subprocess:
raw sockets from several loopback addresses open connections and send half a
request head, holding each. Before, the server kept every one (a descriptor
each, until the process ran out). Now idle ones give way to fresh ones: what
the server holds on its port (its `/proc/<pid>/fd` sockets in the kernel's TCP
table, the rows of /proc/net/tcp, asked through sock_diag) stays within the
caps while the flood is held, the SDK's client with the token keeps listing
and calling, and once the flood goes the server's sockets go too. A client
with the token holding busy connections (open event streams) past the
per-client cap gets `503` with `Retry-After` and a JSON-RPC error, with one
log line for that client.

Tool calls in flight of one token: the real HTTP stack (`run_http`) in this
process over a tool that waits until the test lets it finish: with 8 calls
running, the next is answered 429 with `Retry-After` (the SDK's client raises
the server's message), and once a call finishes the next one runs; calls
whose client hung up before the answer (they run on) count as well.
Every wait is for a state of the server (a socket accepted or closed, a call
arrived), never for a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from bridge.mcp.http import bind, url_of
from bridge.mcp.run import run_http
from bridge.mcp.server import TenantTools
from bridge.types.backend import ToolSchema
from bridge.types.masked import Masked
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import FunctionTool, Tool, TurnContext
from tests.mcp.conftest import CSV_SUM, REPO, roost_env, save_tool
from tests.mcp.test_server_http import ACCEPT, INIT, _text, client, token
from tests.sockdiag import diag_socket, server_inode, tcp_rows
from tests.waits import HANG_S, until

MAX_TOTAL, PER_CLIENT, CALLS = 64, 16, 8  # roost's caps (`bridge.mcp.conns.McpLimits`)
FLOOD_ADDRESSES = [f"127.0.0.{n}" for n in range(2, 8)]  # six attackers
PER_ADDRESS = 30  # connections each: 180 in all, far past what the server may hold
HALF_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


@dataclass
class Served:
    pid: int
    url: str
    port: int
    log: Path

    def said(self) -> str:
        return self.log.read_text(errors="replace")


@asynccontextmanager
async def serving(home: Path, config: Path, tmp_path: Path) -> AsyncIterator[Served]:
    """`roost mcp --http 127.0.0.1:0` with its stderr in a file; SIGTERM at the end."""
    log = tmp_path / "mcp.err"
    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "bridge.cli.main", "mcp", "--tenant", "alice"),
            *("--http", "127.0.0.1:0"),
            env=roost_env(home, config),
            cwd=REPO,
            stderr=err,
            stdout=asyncio.subprocess.DEVNULL,
        )
    try:
        await until(
            lambda: "serving" in log.read_text(errors="replace") or proc.returncode is not None,
            "roost mcp serving",
        )
        text = log.read_text(errors="replace")
        assert "serving" in text, text
        url = text.split("serving", 1)[1].split("\n", 1)[0].split()[-1]
        yield Served(proc.pid, url, int(url.rsplit(":", 1)[1].split("/")[0]), log)
    finally:
        proc.send_signal(signal.SIGTERM)
        status = await asyncio.wait_for(proc.wait(), HANG_S)
        assert status == 0, log.read_text()


def socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                found.add(target[8:-1])
    return found


def held(pid: int, port: int) -> set[int]:
    """The remote ports of the connections the server process holds on `port`."""
    ours = socket_inodes(pid)
    return {
        rem
        for loc, rem, state, inode in tcp_rows()
        if loc == port and state != "0A" and inode in ours
    }


def cut(sock: socket.socket) -> bool:
    """The server closed this connection (EOF or reset)."""
    try:
        return sock.recv(4096, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def taken(sock: socket.socket, pid: int, port: int, diag: socket.socket) -> Callable[[], bool]:
    """The server took `sock`'s connection: it cut it, or it holds its end (the end's
    socket is one of its descriptors; what `held` counts, asked for this one
    connection only)."""
    client = sock.getsockname()

    def took() -> bool:
        if cut(sock):
            return True
        inode = server_inode(diag, port, client)
        return inode not in (None, "0") and inode in socket_inodes(pid)

    return took


def flood_one(port: int, source: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    sock.sendall(HALF_HEAD)  # a head never finished: a slowloris socket
    return sock


async def test_a_connection_flood_is_held_off_and_its_descriptors_go(
    home: Path, config: Path, tmp_path: Path
) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM)
    workspace = home / "tenants" / "alice" / "global" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "spend.csv").write_text("item,amount\ntea,3.5\n")
    secret = token(home, config, "alice")
    flood: list[socket.socket] = []
    async with serving(home, config, tmp_path) as srv:
        pid = srv.pid
        async with client(srv.url, secret, mode="legacy") as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["me__csv_sum"]
        await until(lambda: not held(pid, srv.port), "the first client's sockets closed")
        diag = diag_socket()
        try:
            for source in FLOOD_ADDRESSES:
                for _ in range(PER_ADDRESS):
                    sock = flood_one(srv.port, source)
                    flood.append(sock)
                    # the server took it: it holds it, or it has already cut it
                    await until(taken(sock, pid, srv.port, diag), "the connection accepted")
                    # one that gave way to it may still close on the server's next turn
                    assert len(held(pid, srv.port)) <= MAX_TOTAL + 1
            still = [s for s in flood if not cut(s)]
            assert len(still) <= MAX_TOTAL + 1, "the server let go of the idle flood"
            await until(lambda: len(held(pid, srv.port)) <= MAX_TOTAL, "the server settled")
            # the flood is held open on this side: a client with the token is served
            async with client(srv.url, secret, mode="legacy") as c:
                assert [t.name for t in (await c.list_tools()).tools] == ["me__csv_sum"]
                result = await c.call_tool("me__csv_sum", {"path": "spend.csv"})
                assert json.loads(_text(result)) == {"total": 3.5}
                assert len(held(pid, srv.port)) <= MAX_TOTAL + 1
        finally:
            diag.close()
            for sock in flood:
                sock.close()
        # the flood gone, what the server holds on its port goes back to nothing
        await until(lambda: not held(pid, srv.port), "the server's sockets closed")
        said = srv.said()
    for source in FLOOD_ADDRESSES:
        line = (
            f"MCP: closed an idle connection of {source} to make room "
            f"(at most {PER_CLIENT} per client, {MAX_TOTAL} in all)"
        )
        assert said.count(line) == 1, said  # one line per client, not one per connection
    assert "Traceback" not in said


async def open_stream(stack: AsyncExitStack, url: str, secret: str, source: str) -> None:
    """A session of its own and its event stream (GET), held open: a busy connection."""
    transport = httpx.AsyncHTTPTransport(local_address=source)
    raw = await stack.enter_async_context(httpx.AsyncClient(transport=transport, timeout=HANG_S))
    headers = {**ACCEPT, "Authorization": f"Bearer {secret}"}
    init = await raw.post(url, json=INIT, headers=headers)
    assert init.status_code == 200, init.text
    session = {
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await raw.post(url, json=done, headers={**headers, **session})).status_code == 202
    stream = raw.stream("GET", url, headers={**headers, **session, "Accept": "text/event-stream"})
    answer = await stack.enter_async_context(stream)
    assert answer.status_code == 200


async def raw_request(port: int, source: str) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        writer.write(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return await asyncio.wait_for(reader.read(), HANG_S)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def test_busy_connections_past_the_cap_are_refused_with_503(
    home: Path, config: Path, tmp_path: Path
) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM)
    secret = token(home, config, "alice")
    greedy = "127.0.0.3"
    async with serving(home, config, tmp_path) as srv:
        async with AsyncExitStack() as stack:
            for _ in range(PER_CLIENT):
                await open_stream(stack, srv.url, secret, greedy)
            refused = await raw_request(srv.port, greedy)
            head, _, body = refused.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503 Service Unavailable"), refused
            assert b"\r\nRetry-After: 5\r\n" in head
            error = json.loads(body)["error"]["message"]
            assert error == (
                "roost's MCP server has too many open connections right now; try again in 5 seconds"
            )
            again = await raw_request(srv.port, greedy)
            assert again.startswith(b"HTTP/1.1 503"), again
            # another client is served meanwhile
            async with client(srv.url, secret, mode="legacy") as c:
                assert [t.name for t in (await c.list_tools()).tools] == ["me__csv_sum"]
        said = srv.said()
    line = (
        f"MCP: refused connections of {greedy} with 503: it holds {PER_CLIENT} "
        "busy connections, the most per client; none idle"
    )
    assert said.count(line) == 1, said


# -- tool calls in flight of one token (the real HTTP stack, in this process) -------------


@dataclass
class HeldTool:
    """`me__hold`: each call waits until the test lets it finish."""

    arrived: list[str] = field(default_factory=list)
    go: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        self.arrived.append(str(args.get("n")))
        await self.go.wait()
        return f"done {args.get('n')}"

    def running(self, count: int) -> Callable[[], bool]:
        return lambda: len(self.arrived) == count

    def tools_for(self, turn: TurnContext) -> list[Tool]:
        schema = ToolSchema("me__hold", "waits", {"type": "object"})
        return [FunctionTool(schema, self.run)]


SECRET = "roost-mcp-test-token"


@asynccontextmanager
async def in_process(home: Path, hold: HeldTool) -> AsyncIterator[str]:
    dirs = TenantDirs.of(home, "alice")
    dirs.tools.mkdir(parents=True, exist_ok=True)
    tenant = TenantTools(dirs, hold, lambda d: lambda text: Masked(text))
    sock = bind("127.0.0.1", 0)
    url = url_of(sock)
    stop = asyncio.Event()
    task = asyncio.create_task(run_http(tenant, sock, lambda: SECRET, stop))
    try:
        yield url
    finally:
        hold.go.set()
        stop.set()
        await asyncio.wait_for(task, HANG_S)


async def test_tool_calls_in_flight_past_the_cap_get_429(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "roost.mcp")
    hold = HeldTool()
    async with in_process(home, hold) as url, client(url, SECRET, mode="legacy") as c:
        first = [asyncio.create_task(c.call_tool("me__hold", {"n": n})) for n in range(CALLS)]
        await until(lambda: len(hold.arrived) == CALLS, f"{CALLS} calls running")
        extra = asyncio.create_task(c.call_tool("me__hold", {"n": "extra"}))
        await until(lambda: extra.done() or len(hold.arrived) > CALLS, "the extra call answered")
        assert len(hold.arrived) == CALLS, "a call past the cap ran"
        with pytest.raises(MCPError) as refused:
            await extra
        assert str(refused.value) == (
            f"too many tool calls in flight ({CALLS} at most per token); "
            "wait for one to finish and try again in 5 seconds"
        )
        async with httpx.AsyncClient(timeout=HANG_S) as raw:
            call = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "me__hold", "arguments": {"n": "raw"}},
            }
            answer = await raw.post(
                url, json=call, headers={**ACCEPT, "Authorization": f"Bearer {SECRET}"}
            )
            assert answer.status_code == 429 and answer.headers["retry-after"] == "5"
        assert len(hold.arrived) == CALLS  # the refused calls never ran
        hold.go.set()
        done = [_text(await asyncio.wait_for(t, HANG_S)) for t in first]
        assert done == [f"done {n}" for n in range(CALLS)]
        result = await c.call_tool("me__hold", {"n": "after"})  # the slots given back
        assert _text(result) == "done after"
    told = [r.getMessage() for r in caplog.records if "429" in r.getMessage()]
    assert told == [
        "MCP: refused tool calls of the token with 429 (first from 127.0.0.1): "
        f"{CALLS} in flight, the most per token"
    ]


async def test_calls_whose_clients_left_still_count(home: Path) -> None:
    """A client that sends `tools/call` and hangs up before the answer leaves the call
    running: those count too, so hanging up cannot start calls without end."""
    hold = HeldTool()
    async with in_process(home, hold) as url:
        headers = {**ACCEPT, "Authorization": f"Bearer {SECRET}"}
        async with httpx.AsyncClient(timeout=HANG_S) as raw:
            init = await raw.post(url, json=INIT, headers=headers)
            session = {
                **headers,
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await raw.post(url, json=done, headers=session)).status_code == 202
        for n in range(CALLS):
            call = {
                "jsonrpc": "2.0",
                "id": 100 + n,
                "method": "tools/call",
                "params": {"name": "me__hold", "arguments": {"n": n}},
            }
            async with (
                httpx.AsyncClient(timeout=HANG_S) as raw,
                raw.stream("POST", url, json=call, headers=session) as answer,
            ):
                assert answer.status_code == 200
                await until(hold.running(n + 1), "the call running")
            # the client is gone; its call runs on
        async with client(url, SECRET, mode="legacy") as c:
            extra = asyncio.create_task(c.call_tool("me__hold", {"n": "extra"}))
            answered = lambda: extra.done() or len(hold.arrived) > CALLS  # noqa: E731
            await until(answered, "the extra call answered")
            assert len(hold.arrived) == CALLS, "a call past the cap ran"
            with pytest.raises(MCPError, match="too many tool calls in flight"):
                await extra

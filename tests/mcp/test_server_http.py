"""`roost mcp --tenant T --http 127.0.0.1:0` as a real subprocess, with the SDK's
streamable-HTTP client: the bearer token (401 without it, with a wrong one, with
another tenant's), a call while the daemon runs, list_changed, the chain."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from bridge.audit.verify import verify
from tests.mcp.conftest import (
    BOB_ONLY,
    CSV_SUM,
    REPO,
    chain_text,
    roost_env,
    save_tool,
)
from tests.waits import HANG_S

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _roost(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", *args],
        env=roost_env(home, config),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


def start_daemon(home: Path, config: Path) -> subprocess.Popen[bytes]:
    env = {**roost_env(home, config), "ROOST_WEB__PORT": "0", "ROOST_LLM__PROVIDER": "offline"}
    return subprocess.Popen(
        [sys.executable, "-m", "bridge.cli.main", "serve"],
        env=env,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def token(home: Path, config: Path, tenant: str, rotate: bool = False) -> str:
    run = _roost(home, config, "mcp", "--tenant", tenant, "--token", *(["--rotate"] * rotate))
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


@contextmanager
def serving(home: Path, config: Path, tenant: str, *extra: str) -> Iterator[str]:
    """`roost mcp --http 127.0.0.1:0`; yields the URL it printed; SIGTERM at the end."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bridge.cli.main",
            "mcp",
            "--tenant",
            tenant,
            "--http",
            "127.0.0.1:0",
            *extra,
        ],
        env=roost_env(home, config),
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "serving" in line, line + proc.stderr.read()
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=HANG_S)
        rest = proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        assert status == 0, rest


@asynccontextmanager
async def client(url: str, bearer: str, **kw: object) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {bearer}"})
    async with http, Client(streamable_http_client(url, http_client=http), **kw) as c:  # type: ignore[arg-type]
        yield c


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_the_token_guards_every_request(home: Path, config: Path) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM)
    save_tool(home, "bob", "bob_only", BOB_ONLY)
    alice, bob = token(home, config, "alice"), token(home, config, "bob")
    assert alice != bob and token(home, config, "alice") == alice
    mode = (home / "mcp" / "alice.token").stat().st_mode & 0o777
    assert mode == 0o600
    with serving(home, config, "alice") as url:
        async with httpx.AsyncClient() as raw:
            wrong = ("", "Bearer nope", f"Bearer {bob}", alice)  # none, wrong, bob's, no scheme
            for value in wrong:
                headers = {"Authorization": value} if value else {}
                answer = await raw.post(url, json=INIT, headers={**ACCEPT, **headers})
                assert answer.status_code == 401, headers
                assert "roost mcp --tenant T --token" in answer.json()["error_description"]
                assert answer.headers["www-authenticate"].startswith("Bearer")
            ok = await raw.post(
                url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {alice}"}
            )
            assert ok.status_code == 200
            # DNS rebinding: a loopback listener refuses a foreign Host even with the token
            rebound = {**ACCEPT, "Authorization": f"Bearer {alice}", "Host": "evil.example"}
            evil = await raw.post(url, json=INIT, headers=rebound)
            assert evil.status_code in (403, 421)
        with pytest.raises(BaseExceptionGroup) as refused:  # the SDK's client on a 401
            async with client(url, bob, mode="legacy") as c:
                await c.call_tool("me__csv_sum", {"path": "x"})
        assert refused.value.subgroup(MCPError) is not None
        async with client(url, alice, mode="legacy") as c:
            assert [t.name for t in (await c.list_tools()).tools] == ["me__csv_sum"]
        rotated = token(home, config, "alice", rotate=True)
        async with httpx.AsyncClient() as raw:
            old = await raw.post(
                url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {alice}"}
            )
            assert old.status_code == 401  # rotation works at once, no restart
            new = await raw.post(
                url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {rotated}"}
            )
            assert new.status_code == 200
    assert alice not in chain_text(home) and rotated not in chain_text(home)


async def test_call_and_list_changed_while_the_daemon_runs(home: Path, config: Path) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM)
    workspace = home / "tenants" / "alice" / "global" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "spend.csv").write_text("item,amount\ntea,3.5\n")
    daemon = start_daemon(home, config)
    notes: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ServerNotification):
            await notes.put(message.method)

    try:
        secret = token(home, config, "alice")
        with serving(home, config, "alice") as url:
            async with client(url, secret, mode="legacy", message_handler=on_message) as c:
                for _ in range(3):
                    result = await c.call_tool("me__csv_sum", {"path": "spend.csv"})
                    assert json.loads(_text(result)) == {"total": 3.5}
                save_tool(home, "alice", "other", BOB_ONLY)
                assert (
                    await asyncio.wait_for(notes.get(), HANG_S)
                    == "notifications/tools/list_changed"
                )
                assert {t.name for t in (await c.list_tools()).tools} == {
                    "me__csv_sum",
                    "me__other",
                }
            send = _roost(home, config, "send", "--offline", "--tenant", "alice", "hello")
            assert send.returncode == 0, send.stderr
        assert daemon.poll() is None  # it ran the whole time
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=HANG_S)
    report = verify(home / "audit" / "chain.jsonl")
    assert report.ok, report
    records = [json.loads(line) for line in chain_text(home).splitlines()]
    mcp_calls = [
        r for r in records if r["event"] == "tool.called" and r["details"].get("channel") == "mcp"
    ]
    assert len(mcp_calls) == 3 and all(r["tenant"] == "alice" for r in mcp_calls)
    assert any(r["event"] == "message.answered" for r in records)  # the send, same chain


def test_a_remote_host_needs_allow_remote(home: Path, config: Path) -> None:
    run = _roost(home, config, "mcp", "--tenant", "alice", "--http", "0.0.0.0:0")
    assert run.returncode == 2 and "--allow-remote" in run.stderr
    run = _roost(home, config, "mcp", "--tenant", "alice", "--http", "port")
    assert run.returncode == 2 and "give a port" in run.stderr

"""A home with tenants alice and bob, saved tools, and `roost mcp` as a real subprocess."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from mcp.client.stdio import StdioServerParameters

from forge.library import ToolLibrary, build_spec

REPO = Path(__file__).resolve().parents[2]

CSV_SUM = '''
import csv

def run(path: str, column: str = "amount") -> dict:
    """Sum one column of a CSV file in the workspace."""
    total = 0.0
    with open(path) as fh:
        for row in csv.DictReader(fh):
            total += float(row[column])
    return {"total": round(total, 2)}
'''

BOB_ONLY = 'def run() -> str:\n    """Bob\'s private tool."""\n    return "bob"\n'

FAILING = 'def run(n: int) -> int:\n    """Divide one by n."""\n    return 1 // n\n'


def echo_tool(port: int) -> str:
    """A tool that sends its vault secret to a local echo server and returns the answer."""
    return f'''
import net

SECRETS = ["api_token"]
NETWORK = ["127.0.0.1:{port}"]

def run() -> str:
    """Ask the echo server what it saw."""
    auth = {{"Authorization": "Bearer " + secret("api_token")}}
    return net.get("http://127.0.0.1:{port}/echo", headers=auth).text
'''


def save_tool(home: Path, tenant: str, name: str, source: str, description: str = "") -> None:
    made = build_spec(name, description or f"{name} tool", source)
    assert made.tool is not None, made.findings
    ToolLibrary(home / "tenants" / tenant / "global" / "forge" / "tools", lambda: 0).save(
        made.tool, replace=True
    )


def remove_tool(home: Path, tenant: str, name: str) -> None:
    ToolLibrary(home / "tenants" / tenant / "global" / "forge" / "tools", lambda: 0).remove(name)


@pytest.fixture
def config(home: Path, tmp_path: Path) -> Path:
    path = tmp_path / "roost.toml"
    path.write_text(
        "[tenants.alice]\ntelegram_ids = [111]\n\n[tenants.bob]\ntelegram_ids = [222]\n"
    )
    return path


def allow_host(config: Path, port: int) -> None:
    config.write_text(config.read_text() + f'\n[forge]\nprivate_hosts = ["127.0.0.1:{port}"]\n')


def roost_env(home: Path, config: Path) -> dict[str, str]:
    return {
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": str(config),
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
    }


def stdio_params(home: Path, config: Path, tenant: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "bridge.cli.main", "mcp", "--tenant", tenant],
        env=roost_env(home, config),
        cwd=str(REPO),
    )


def chain_text(home: Path) -> str:
    return (home / "audit" / "chain.jsonl").read_text()


class Echo:
    """An HTTP server on 127.0.0.1 that answers with the base64 of the Authorization it got."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def _echo(self, request: web.Request) -> web.Response:
        header = request.headers.get("Authorization", "")
        self.seen.append(header)
        return web.Response(text=base64.b64encode(header.encode()).decode())

    async def __aenter__(self) -> Echo:
        app = web.Application()
        app.router.add_get("/echo", self._echo)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


@pytest.fixture
async def echo() -> AsyncIterator[Echo]:
    async with Echo() as server:
        yield server


def environ_without_roost() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}

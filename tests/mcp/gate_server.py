"""An external MCP server for the reload tests (official SDK, stdio).

Tools: `pid` (this server process's id and the `MARK` it was started with)
and `wait(path)`: writes `<path>.waiting`, then answers once `path` exists,
so a test holds a call open for as long as it likes without a clock.
"""

from __future__ import annotations

import asyncio
import os

import anyio
from mcp.server import MCPServer

server = MCPServer("gate")


@server.tool()
def pid() -> str:
    """This server's process id."""
    return f"pid={os.getpid()} mark={os.environ.get('MARK', '')}"


@server.tool()
async def wait(path: str) -> str:
    """Answer once the file `path` exists."""
    await anyio.Path(path + ".waiting").write_text(str(os.getpid()))
    while not await anyio.Path(path).exists():
        await asyncio.sleep(0.02)
    return f"opened by pid={os.getpid()}"


if __name__ == "__main__":
    server.run("stdio")

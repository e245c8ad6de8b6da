"""A small external MCP server written with the official SDK, started over stdio by the tests.

`python tests/mcp/ext_server.py [--crash]`: tools `add`, `shout`, `fail`
(answers with a tool error), `slow` (sleeps), `echo`, `whoami` (the env
variable `EXT_TOKEN` it was started with, whether it sees ROOST_*, its pid),
`admin` (never on an allow-list) and `dotted.name`. `--crash` exits at once,
like a server whose binary is broken.
"""

from __future__ import annotations

import asyncio
import os
import sys

if __name__ == "__main__" and "--crash" in sys.argv:
    # before the SDK's import: importing it costs about 1 s of CPU, and a broken
    # server's binary would not get that far
    sys.exit(3)

from mcp.server import MCPServer

server = MCPServer("ext")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the ext server refuses")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "late"


@server.tool()
def whoami() -> str:
    """Tell the token the server was started with."""
    roost = any(k.startswith("ROOST_") for k in os.environ)
    return f"token={os.environ.get('EXT_TOKEN', '(none)')} roost={roost} pid={os.getpid()}"


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def admin() -> str:
    """Something the operator did not allow."""
    return "admin ran"


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name a model API would refuse."""
    return "dotted ran"


if __name__ == "__main__":
    server.run("stdio")

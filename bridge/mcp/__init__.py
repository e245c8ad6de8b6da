"""MCP, both ways: roost's server of a tenant's `me.*` tools (`roost mcp`) and
the client of the external MCP servers an operator attaches to a tenant.

An adapter layer beside `bridge.channels` and `bridge.llm`: it imports the
official MCP SDK (and through it anyio, httpx, starlette); the capability,
core and types layers never import it.
"""

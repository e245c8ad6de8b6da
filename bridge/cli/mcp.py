"""`roost mcp --tenant T`: a tenant's saved `me.*` tools as an MCP server.

stdio by default (what Claude Desktop and Claude Code start; roost's own
`claude_cli` backend serves each call its turn's tools itself,
`bridge.mcp.turn_tools`); `--http [HOST:]PORT` serves streamable HTTP on loopback
with the tenant's bearer token (`--token` shows it, `--token --rotate`
replaces it). The server is built from the same composition root as the
daemon (`bridge.app.build`): configuration, vault, audit chain and sandbox are
the objects a chat turn uses, and it runs beside a running daemon (the chain
and SQLite are shared under their locks). A tenant roost does not know exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys

from bridge.cli.rows import tenant_arg
from bridge.core.config import Settings
from bridge.core.tenants import configured_tenants
from bridge.types.tenant_dirs import TenantDirs

EX_USAGE = 2


def mcp_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, required=True, help="whose tools to serve")
    p.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve streamable HTTP on HOST:PORT (default host 127.0.0.1) instead of stdio; "
        "clients send Authorization: Bearer <token>",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --http: allow a non-loopback HOST (put TLS in front of it)",
    )
    p.add_argument(
        "--token", action="store_true", help="print the tenant's MCP bearer token and exit"
    )
    p.add_argument("--rotate", action="store_true", help="with --token: make a new token")


def known_tenant(settings: Settings, tenant: str) -> bool:
    """Configured (`[tenants.X]` or the local tenant) or already has a directory."""
    if tenant in configured_tenants(settings.tenants, settings.local_tenant):
        return True
    return TenantDirs.of(settings.home, tenant).root.is_dir()


def run_mcp(args: argparse.Namespace, settings: Settings) -> int:
    if not known_tenant(settings, args.tenant):
        print(
            f"roost mcp: unknown tenant {args.tenant!r}: add [tenants.{args.tenant}] to the "
            f"config or use the local tenant ({settings.local_tenant!r})",
            file=sys.stderr,
        )
        return EX_USAGE
    if args.rotate and not args.token:
        print("roost mcp: --rotate goes with --token", file=sys.stderr)
        return EX_USAGE
    if args.token:
        return _print_token(settings, args.tenant, args.rotate)
    if args.allow_remote and not args.http:
        print("roost mcp: --allow-remote goes with --http", file=sys.stderr)
        return EX_USAGE
    if args.http:
        return _serve_http(settings, args)
    return asyncio.run(_serve(settings, args.tenant, None))


def _print_token(settings: Settings, tenant: str, rotate: bool) -> int:
    from bridge.mcp.tokens import ensure_token, new_token, token_path

    token = new_token(settings.home, tenant) if rotate else ensure_token(settings.home, tenant)
    print(token)
    note = "a new token: the old one no longer works; " if rotate else ""
    print(f"({note}kept in {token_path(settings.home, tenant)})", file=sys.stderr)
    return 0


def _serve_http(settings: Settings, args: argparse.Namespace) -> int:
    from bridge.mcp.http import ListenError, bind, parse_listen

    try:
        host, port = parse_listen(args.http, args.allow_remote)
        sock = bind(host, port)
    except ListenError as exc:
        print(f"roost mcp: {exc}", file=sys.stderr)
        return EX_USAGE
    return asyncio.run(_serve(settings, args.tenant, sock, remote=args.allow_remote))


async def _serve(
    settings: Settings, tenant: str, sock: socket.socket | None, remote: bool = False
) -> int:
    from bridge.app.build import Roost, build
    from bridge.llm.offline import OfflineBackend
    from bridge.mcp.http import url_of
    from bridge.mcp.run import run_http, run_stdio
    from bridge.mcp.server import TenantTools
    from bridge.mcp.tokens import ensure_token, read_token
    from bridge.personal_tools.source import ForgeTools

    roost: Roost = await build(settings, backend=OfflineBackend())
    try:
        source = next(s for s in roost.tool_sources if isinstance(s, ForgeTools))
        vault = roost.loadout.vault
        tools = TenantTools(roost.tenant_dirs(tenant), source, lambda d: vault.masker(d).mask)
        if sock is None:
            await run_stdio(tools)
            return 0
        ensure_token(settings.home, tenant)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"roost mcp: serving {tenant}'s tools on {url_of(sock)}", file=sys.stderr)
        sys.stderr.flush()
        await run_http(tools, sock, lambda: read_token(settings.home, tenant), stop, remote)
        return 0
    finally:
        await roost.aclose()

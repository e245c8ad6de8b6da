"""`roost mcp --http [HOST:]PORT`: the streamable-HTTP transport, behind a bearer token.

The SDK's streamable-HTTP app (its DNS-rebinding `Host` check on for
loopback) sits behind `BearerGate`, which answers 401 to any request without
the tenant's token before the SDK sees a byte; the token file is read on each
request, so `roost mcp --token --rotate` locks the old token out at once.
`parse_listen` reads `[HOST:]PORT` and refuses a non-loopback host unless the
operator said `--allow-remote`. uvicorn serves it inside roost's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.mcp.tokens import bearer_ok

DEFAULT_HOST = "127.0.0.1"
PATH = "/mcp"


class ListenError(ValueError):
    """A `--http` address roost will not listen on; the message says what to do."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_listen(text: str, allow_remote: bool = False) -> tuple[str, int]:
    """`8790`, `127.0.0.1:8790`, `[::1]:8790` -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, text
    host = host.removeprefix("[").removesuffix("]") or DEFAULT_HOST
    if not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise ListenError(
            f"--http {text!r}: give a port (1-65535, 0 picks a free one) as PORT or HOST:PORT"
        )
    if not allow_remote and not is_loopback(host):
        raise ListenError(
            f"--http {text!r}: {host} is not a loopback address; roost serves MCP on "
            "127.0.0.1 unless you add --allow-remote (then put TLS in front of it)"
        )
    return host, int(port_text)


class BearerGate:
    """ASGI middleware: only requests carrying the current token reach `app`."""

    def __init__(self, app: ASGIApp, token: Callable[[], str | None]) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._app(scope, receive, send)
            return
        if kind != "http":
            # a WebSocket (uvicorn serves one once `websockets` or `wsproto` is
            # installed) or any other kind: never past the gate, token or not
            if kind == "websocket" and (await receive())["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008})
            return
        headers = dict(scope.get("headers") or ())
        raw = headers.get(b"authorization")
        header = raw.decode("latin-1") if raw is not None else None
        if bearer_ok(header, self._token()):
            await self._app(scope, receive, send)
            return
        await _unauthorized(send)


async def _unauthorized(send: Send) -> None:
    body = json.dumps(
        {
            "error": "unauthorized",
            "error_description": "send Authorization: Bearer <token>; "
            "`roost mcp --tenant T --token` shows it",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="roost-mcp"'),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a busy port is a clear error, not uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as exc:
        sock.close()
        raise ListenError(f"--http: cannot listen on {host}:{port} ({exc.strerror})") from None
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    sock.set_inheritable(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{PATH}"


async def serve_http(app: Any, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve `app` on `sock` until `stop` is set.

    uvicorn runs in this event loop without signal handlers of its own: the
    caller owns SIGTERM/SIGINT and sets `stop`, so roost closes its audit chain
    and sandbox helpers after the last request.
    """
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    waiter.cancel()
    await task

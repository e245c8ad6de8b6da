"""`roost mcp --http [HOST:]PORT`: the streamable-HTTP transport, behind a bearer token.

The SDK's streamable-HTTP app (its DNS-rebinding `Host` check on for
loopback) sits behind `BearerGate`, which answers 401 to any request without
the tenant's token before the SDK sees a byte; the token file is read on each
request, so `roost mcp --token --rotate` locks the old token out at once.
`parse_listen` reads `[HOST:]PORT` and refuses a non-loopback host unless the
operator said `--allow-remote`. uvicorn serves it inside roost's event loop,
behind roost's own accept loop (`bridge.mcp.guard`: connections per client
and in all, 503 with `Retry-After` past them). A request carrying
`tools/call` takes one of its token's slots (`conns.CallSlots`) before the
SDK sees it; past `calls_per_token` in flight it is answered 429 with
`Retry-After` and a JSON-RPC error the SDK's client shows as is.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.mcp.conns import CallSlots, McpLimits
from bridge.mcp.guard import Guard, rpc_error
from bridge.mcp.tokens import bearer_ok

log = logging.getLogger("roost.mcp")

DEFAULT_HOST = "127.0.0.1"
PATH = "/mcp"
BODY_LOOKED_AT = 4 * 1024 * 1024  # the SDK's own body limit: a longer one it refuses


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
    """ASGI middleware: only requests carrying the current token reach `app`, and a
    token's tool calls in flight stay within `calls` (when given)."""

    def __init__(
        self,
        app: ASGIApp,
        token: Callable[[], str | None],
        calls: CallSlots | None = None,
        retry_after_s: int = 5,
    ) -> None:
        self._app = app
        self._token = token
        self._calls = calls
        self._retry_after_s = retry_after_s
        self._told = False

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
        expected = self._token()
        if not bearer_ok(header, expected):
            await _unauthorized(send)
            return
        assert expected is not None
        if self._calls is None or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        body, receive = await _read_body(receive)
        if not _calls_a_tool(body):
            await self._app(scope, receive, send)
            return
        if not self._calls.take(expected):
            self._refused(scope)
            await _too_many(send, self._calls.per_token, self._retry_after_s)
            return
        try:
            await self._app(scope, receive, send)
        finally:
            self._calls.give(expected)

    def _refused(self, scope: Scope) -> None:
        if self._told:  # one line: the token is one client, whatever its addresses
            return
        self._told = True
        client = scope.get("client") or ("?", 0)
        log.warning(
            "MCP: refused tool calls of the token with 429 (first from %s): %d in flight, "
            "the most per token",
            client[0],
            self._calls.per_token if self._calls is not None else 0,
        )


async def _read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The request body (what the SDK would read: up to its limit), and a `receive`
    that hands the SDK the same messages, then what follows."""
    seen: list[Message] = []
    size = 0
    while size <= BODY_LOOKED_AT:
        message = await receive()
        seen.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(m.get("body", b"") for m in seen if m["type"] == "http.request")

    async def replay() -> Message:
        return seen.pop(0) if seen else await receive()

    return body, replay


def _calls_a_tool(body: bytes) -> bool:
    """Whether a JSON-RPC body (one message or a batch) asks for `tools/call`. Parsed
    whole (no byte search first: `tools\u002fcall` is the same method to the SDK)."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return False  # the SDK answers what it cannot parse
    messages = parsed if isinstance(parsed, list) else [parsed]
    return any(isinstance(m, dict) and m.get("method") == "tools/call" for m in messages)


async def _too_many(send: Send, per_token: int, retry_after_s: int) -> None:
    body = rpc_error(
        f"too many tool calls in flight ({per_token} at most per token); "
        f"wait for one to finish and try again in {retry_after_s} seconds"
    )
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"retry-after", str(retry_after_s).encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


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


async def serve_http(
    app: Any, sock: socket.socket, stop: asyncio.Event, limits: McpLimits | None = None
) -> None:
    """Serve `app` on `sock` until `stop` is set, each connection past `Guard` first.

    uvicorn runs in this event loop without signal handlers or a listener of its
    own: the caller owns SIGTERM/SIGINT and sets `stop`, so roost closes its audit
    chain and sandbox helpers after the last request; `Guard.accepting` hands
    uvicorn's protocol each connection it admits.
    """
    import uvicorn

    guard = Guard(limits or McpLimits())
    # proxy_headers off: `scope["client"]` is the socket's peer, never X-Forwarded-For
    # (the guard finds a request's connection by it; a header must not name another's)
    config = uvicorn.Config(guard.app(app), log_level="warning", lifespan="on", proxy_headers=False)
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[])  # the lifespan only: no listener of uvicorn's own
    if server.should_exit:
        sock.close()
        return

    def protocol() -> asyncio.Protocol:
        return config.http_protocol_class(  # type: ignore[call-arg]
            config=config, server_state=server.server_state, app_state=server.lifespan.state
        )

    accepting = asyncio.create_task(guard.accepting(sock, protocol))
    main = asyncio.create_task(server.main_loop())
    waiter = asyncio.create_task(stop.wait())
    await asyncio.wait({accepting, main, waiter}, return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    waiter.cancel()
    accepting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await accepting
    sock.close()
    await main
    await server.shutdown(sockets=[])

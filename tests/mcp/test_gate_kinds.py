"""The MCP endpoint's token gate and the ASGI request kinds: only `http` requests with
the token and the server's own `lifespan` reach the MCP app. A WebSocket request
(uvicorn serves them as soon as `websockets` or `wsproto` is installed, which roost
does not pin) is closed with 1008 whatever it carries, and an unknown kind is
dropped: the gate once passed every kind but `http` through (session 32's pass)."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.mcp.http import BearerGate

TOKEN = "s3cret-token"


class App:
    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.scopes.append(scope["type"])


async def call(scope: dict[str, Any], incoming: list[dict[str, Any]]) -> tuple[App, list[Any]]:
    app, sent = App(), []
    queue = list(incoming)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await BearerGate(app, lambda: TOKEN)(scope, receive, send)
    return app, sent


@pytest.mark.parametrize("auth", [None, f"Bearer {TOKEN}"], ids=["no token", "the token"])
async def test_a_websocket_never_reaches_the_app(auth: str | None) -> None:
    headers = [(b"authorization", auth.encode())] if auth else []
    scope = {"type": "websocket", "path": "/mcp", "headers": headers}
    app, sent = await call(scope, [{"type": "websocket.connect"}])
    assert app.scopes == []
    assert sent == [{"type": "websocket.close", "code": 1008}]


async def test_an_unknown_kind_never_reaches_the_app() -> None:
    app, sent = await call({"type": "webtransport", "headers": []}, [])
    assert app.scopes == [] and sent == []


async def test_lifespan_and_a_request_with_the_token_pass() -> None:
    app, _ = await call({"type": "lifespan"}, [])
    assert app.scopes == ["lifespan"]
    scope = {"type": "http", "headers": [(b"authorization", f"Bearer {TOKEN}".encode())]}
    app, _ = await call(scope, [])
    assert app.scopes == ["http"]


async def test_a_request_without_the_token_gets_401() -> None:
    app, sent = await call({"type": "http", "headers": []}, [])
    assert app.scopes == [] and sent[0]["status"] == 401

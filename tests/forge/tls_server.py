"""A real HTTPS server on 127.0.0.1 for the broker's tests: routes given as
`(path, handler)` pairs, a throwaway self-signed certificate, and a broker that
trusts it and may reach it (`private_hosts`)."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path

from aiohttp import web

from forge.broker import Broker
from tests.forge.test_net import _cert

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextlib.asynccontextmanager
async def tls_server(
    tmp: Path, routes: Iterable[tuple[str, Handler]]
) -> AsyncIterator[tuple[int, Path]]:
    """Serve `routes` (GET) over TLS; yields (port, the certificate's path)."""
    key, crt = _cert(tmp)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(crt, key)
    app = web.Application()
    for path, handler in routes:
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
    await site.start()
    try:
        yield runner.addresses[0][1], crt
    finally:
        await runner.cleanup()


def trusting_broker(port: int, crt: Path) -> Broker:
    """A broker that trusts `crt` and may call 127.0.0.1:`port`."""
    return Broker(
        private_hosts=(f"127.0.0.1:{port}",), ssl_context=ssl.create_default_context(cafile=crt)
    )

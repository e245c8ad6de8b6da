"""Broker overhead per request against a direct aiohttp request to the same loopback
HTTPS server, in one run; and a sandboxed call's p50 with and without `import net`.

    .venv/bin/python -m bench.net [N] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from forge.broker import Broker
from forge.net_rules import parse_hosts
from forge.protocol.net import NetRequest
from forge.runner import SandboxRunner


async def main(n: int) -> None:
    """The throwaway certificate, its key and the workspace are removed at the end."""
    with tempfile.TemporaryDirectory(prefix="roost-bench-net-") as tmp:
        await measure(n, Path(tmp))


async def measure(n: int, tmp: Path) -> None:
    key, crt = tmp / "k.pem", tmp / "c.pem"
    subprocess.run(  # noqa: ASYNC221 - once, before anything is measured
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(crt), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True,
    )  # fmt: skip
    sctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    sctx.load_cert_chain(crt, key)
    app = web.Application()
    app.router.add_get("/", lambda r: web.json_response({"ok": 1}))
    ar = web.AppRunner(app)
    await ar.setup()
    site = web.TCPSite(ar, "127.0.0.1", 0, ssl_context=sctx)
    await site.start()
    port = ar.addresses[0][1]
    url = f"https://127.0.0.1:{port}/"
    cctx = ssl.create_default_context(cafile=str(crt))
    broker = Broker(private_hosts=(f"127.0.0.1:{port}",), ssl_context=cctx, rate_per_minute=10**9)
    direct, brokered = [], []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=cctx)) as s:
        for _ in range(n):
            t = time.perf_counter()
            async with s.get(url) as r:
                await r.read()
            direct.append(time.perf_counter() - t)
            call = broker.open_call(
                tool="b", network=parse_hosts([f"127.0.0.1:{port}"]), secrets={},
                deadline=time.monotonic() + 60, rate_key="b", on_http=None,
            )  # fmt: skip
            t = time.perf_counter()
            await broker.fetch(call, NetRequest("GET", url))
            brokered.append(time.perf_counter() - t)
            await broker.close_call(call)
    d, b = statistics.median(direct) * 1e3, statistics.median(brokered) * 1e3
    print(f"direct aiohttp (kept-alive session) p50 {d:.3f} ms")
    print(f"broker, new session per call     p50 {b:.3f} ms  ({b / d:.1f}x)")
    runner = SandboxRunner(broker=broker)
    await runner.start()
    ws = tmp / "ws"
    ws.mkdir()
    plain = 'def run() -> int:\n    """d"""\n    return 1\n'
    with_net = "import net\n" + plain
    fetch = (
        f'import net\nNETWORK = ["127.0.0.1:{port}"]\n\ndef run() -> int:\n'
        f'    """d"""\n    return net.get("{url}").status\n'
    )
    for name, src in (("no net", plain), ("import net", with_net), ("one net.get", fetch)):
        times = []
        for _ in range(n):
            t = time.perf_counter()
            res = await runner.run(src, {}, ws)
            assert res.ok, res
            times.append(time.perf_counter() - t)
        print(f"sandboxed call, {name:12s} p50 {statistics.median(times) * 1e3:.3f} ms")
    await runner.aclose()
    await ar.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=200, help="requests and calls each")
    parser.add_argument("--quick", action="store_true", help="5 each (CI: it still runs)")
    args = parser.parse_args()
    asyncio.run(main(5 if args.quick else args.n))

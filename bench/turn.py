"""Per-turn overhead of roost itself, and turns per second over HTTP.

Prints, in one run on this machine:
1. `core.handle` latency with an in-process zero-latency model (everything
   roost does per turn: tenant, lock, session load/store in SQLite, prompt,
   agent loop, audit), p50/p99, next to a bare `await` of the same model;
2. turns/s through `POST /api/chat` with 1, 10 and 100 concurrent clients,
   against (a) a zero-latency model in the daemon and (b) the fake
   OpenAI-compatible server over HTTP, next to a bare aiohttp echo handler
   under the same load — each server in its own process, clients here.

Run: `.venv/bin/python bench/turn.py [--turns N] [--seconds S]`.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
from aiohttp import web

from bridge.app.build import build
from bridge.core.config import load_settings
from bridge.types.messages import Inbound
from tests.conftest import ScriptedBackend

TOKEN = "bench-token-0123456789"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class EchoModel(ScriptedBackend):
    def __init__(self) -> None:
        super().__init__()

    async def stream(self, request: Any) -> Any:
        self.steps.append(f"echo: {request.messages[-1].content}")
        async for event in super().stream(request):
            yield event
        self.requests.clear()


def isolated_settings(home: Path, **extra: str) -> Any:
    for key in list(os.environ):
        if key.startswith("ROOST_"):
            del os.environ[key]
    cfg = home / "roost.toml"
    cfg.write_text("")
    os.environ["ROOST_CONFIG"] = str(cfg)
    os.environ["ROOST_HOME"] = str(home / "home")
    os.environ.update(extra)
    return load_settings()


async def overhead(turns: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = isolated_settings(Path(tmp))
        model = EchoModel()
        roost = await build(settings, backend=model)
        times: list[float] = []
        for i in range(turns):
            inbound = Inbound("web", "local", f"c{i % 20}", f"message {i}", str(i))
            start = time.perf_counter()
            await roost.core.handle(inbound)
            times.append(time.perf_counter() - start)
        bare: list[float] = []
        from bridge.types.backend import ChatMessage, ModelRequest

        request = ModelRequest("sys", (ChatMessage("user", "x"),))
        for _ in range(turns):
            start = time.perf_counter()
            async for _event in model.stream(request):
                pass
            bare.append(time.perf_counter() - start)
        await roost.aclose()
    return statistics.median(times) * 1e3, pct(times, 99) * 1e3, statistics.median(bare) * 1e3


def serve_echo(port_q: Any) -> None:
    async def main() -> None:
        async def echo(request: web.Request) -> web.Response:
            body = await request.json()
            return web.json_response({"reply": f"echo: {body['text']}", "kind": "answer"})

        app = web.Application()
        app.router.add_post("/api/chat", echo)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port_q.put(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_roost(port_q: Any, home: str, model_url: str | None) -> None:
    async def main() -> None:
        from bridge.channels.web import WebChannel

        extra = {"ROOST_WEB__TOKEN": TOKEN}
        if model_url:
            extra |= {"ROOST_LLM__BASE_URL": model_url, "ROOST_LLM__MODEL": "m"}
        settings = isolated_settings(Path(home), **extra)
        roost = await build(settings, backend=None if model_url else EchoModel())
        channel = WebChannel(roost.core.handle, roost.command_list, TOKEN, "127.0.0.1", 0)
        await channel.start()
        port_q.put(channel.port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_fake_model(port_q: Any) -> None:
    async def main() -> None:
        from tests.fakes.fake_openai import FakeOpenAI

        fake = FakeOpenAI()
        await fake.start()
        port_q.put(fake.base_url)
        await asyncio.Event().wait()

    asyncio.run(main())


async def load(port: int, clients: int, seconds: float) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds
    headers = {"Authorization": f"Bearer {TOKEN}"}
    conn = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}", connector=conn) as http:

        async def client(i: int) -> None:
            nonlocal done
            n = 0
            while time.perf_counter() < stop_at:
                payload = {"text": f"hello {n}", "chat": f"bench{i}"}
                async with http.post("/api/chat", json=payload, headers=headers) as r:
                    body = await r.json()
                    assert body["reply"].startswith("echo:"), body
                done += 1
                n += 1

        start = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        return done / (time.perf_counter() - start)


def start(target: Any, *args: Any) -> tuple[Any, Any]:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=target, args=(q, *args), daemon=True)
    proc.start()
    return proc, q.get(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    p50, p99, bare = asyncio.run(overhead(args.turns))
    print(f"core.handle, zero-latency model ({args.turns} turns)")
    print(f"  p50 {p50:.3f} ms   p99 {p99:.3f} ms   (bare model call p50 {bare:.3f} ms)")
    print(f"  roost's own overhead p50 ≈ {p50 - bare:.3f} ms (aim < 2 ms)")

    with tempfile.TemporaryDirectory() as tmp1, tempfile.TemporaryDirectory() as tmp2:
        procs = []
        echo_proc, echo_port = start(serve_echo)
        roost_proc, roost_port = start(serve_roost, tmp1, None)
        model_proc, model_url = start(serve_fake_model)
        http_proc, http_port = start(serve_roost, tmp2, model_url)
        procs += [echo_proc, roost_proc, model_proc, http_proc]
        try:
            print(
                f"\nPOST /api/chat turns/s ({args.seconds:g} s per point; servers in own processes)"
            )
            print(
                f"{'clients':>8} {'bare echo':>10} {'roost+0-lat':>12} {'ratio':>6} "
                f"{'roost+fake HTTP model':>22}"
            )
            for clients in (1, 10, 100):
                echo = asyncio.run(load(echo_port, clients, args.seconds))
                zero = asyncio.run(load(roost_port, clients, args.seconds))
                fake = asyncio.run(load(http_port, clients, args.seconds))
                print(
                    f"{clients:>8} {echo:>10.0f} {zero:>12.0f} {echo / zero:>5.1f}x {fake:>22.0f}"
                )
        finally:
            for proc in procs:
                proc.terminate()
                proc.join(5)


if __name__ == "__main__":
    main()

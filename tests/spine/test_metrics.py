"""`GET /metrics` over a real socket: off by default, token and Host checked, counts move.

The web channel is made by the daemon's own factory (`serve.web_channel`)
from settings, so `[web] metrics` is what turns the route on; the turns go
through `POST /api/chat` with the scripted model and a real `MemoryAudit`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from bridge.app.build import Roost, build
from bridge.app.metrics import Metrics
from bridge.app.serve import web_channel
from bridge.core.config import Settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import BackendError
from tests.conftest import Clock, ScriptedBackend

TOKEN = "metrics-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SAMPLE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$")


def on(settings: Settings, metrics: bool) -> Settings:
    web = settings.web.model_copy(update={"port": 0, "metrics": metrics, "token": SecretStr(TOKEN)})
    return settings.model_copy(update={"web": web})


@asynccontextmanager
async def served(
    settings: Settings, clock: Clock, *steps: object
) -> AsyncIterator[tuple[aiohttp.ClientSession, Roost, int]]:
    roost = await build(settings, backend=ScriptedBackend(*steps), audit=MemoryAudit(), clock=clock)
    web = web_channel(settings, roost, {}).channel
    await web.start()  # type: ignore[attr-defined]
    port = web.port  # type: ignore[attr-defined]
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http:
            yield http, roost, port
    finally:
        await web.stop()  # type: ignore[attr-defined]
        await roost.aclose()


def samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value, every sample line checked against the text format."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.fullmatch(r"# (HELP|TYPE) [a-z_]+ .+", line), line
            continue
        match = SAMPLE.fullmatch(line)
        assert match, f"not a sample line: {line!r}"
        out[match[1] + (match[2] or "")] = float(match[3])
    return out


async def scrape(http: aiohttp.ClientSession) -> dict[str, float]:
    async with http.get("/metrics", headers=AUTH) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return samples(await r.text())


async def chat(http: aiohttp.ClientSession, text: str) -> dict[str, Any]:
    async with http.post("/api/chat", json={"text": text}, headers=AUTH) as r:
        assert r.status == 200
        return dict(await r.json())


async def test_off_by_default_is_a_404(settings: Settings, clock: Clock) -> None:
    assert settings.web.metrics is False
    async with (
        served(on(settings, False), clock) as (http, _, _),
        http.get("/metrics", headers=AUTH) as r,
    ):
        assert r.status == 404
        assert "roost_" not in await r.text()


BAD_AUTH = [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}]


@pytest.mark.parametrize("headers", BAD_AUTH)
async def test_needs_the_bearer_token(
    settings: Settings, clock: Clock, headers: dict[str, str]
) -> None:
    async with (
        served(on(settings, True), clock) as (http, _, _),
        http.get("/metrics", headers=headers) as r,
    ):
        assert r.status == 401
        assert "roost_" not in await r.text()


async def test_a_forged_host_is_refused(settings: Settings, clock: Clock) -> None:
    async with served(on(settings, True), clock) as (http, _, port):
        for host in (f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", "localhost:1"):
            headers = {**AUTH, "Host": host}
            async with http.get("/metrics", headers=headers) as r:
                assert r.status == 421, host
                assert "roost_" not in await r.text()


async def test_counts_move_after_real_turns(settings: Settings, clock: Clock) -> None:
    steps = ("first answer", "second answer", BackendError("timeout", "The model is slow."))
    async with served(on(settings, True), clock, *steps) as (http, _, _):
        before = await scrape(http)
        assert 'roost_turns_total{outcome="answer"}' not in before
        assert (await chat(http, "hello"))["reply"] == "first answer"
        assert (await chat(http, "again"))["reply"] == "second answer"
        assert (await chat(http, "and once more"))["kind"] == "error"
        after = await scrape(http)
    assert after['roost_turns_total{outcome="answer"}'] == 2
    assert after['roost_turns_total{outcome="failed"}'] == 1
    assert after['roost_model_failures_total{kind="timeout"}'] == 1
    assert after["roost_turn_seconds_count"] == 2
    # every model step is timed, the failed one too, labelled with the backend's name
    assert after['roost_model_seconds_count{backend="scripted"}'] == 3
    assert after['roost_model_seconds_bucket{backend="scripted",le="+Inf"}'] == 3
    assert 'roost_model_seconds_count{backend="scripted"}' not in before
    assert after['roost_turn_seconds_bucket{le="+Inf"}'] == 2
    # every turn's bookkeeping went to the audit sink as batches; each batch is counted
    assert after["roost_audit_batch_size_count"] >= 3
    assert after["roost_audit_batch_size_sum"] >= 2 * 2 + 1  # received+answered, +failed


async def test_tool_calls_and_failures_by_kind_from_audit_events(
    settings: Settings, clock: Clock
) -> None:
    """Counted from the `tool.called` events the forge emits (their schema, their enum)."""
    async with served(on(settings, True), clock) as (http, roost, _):
        for details in (
            {"name": "me.a", "hash": "ab12", "ms": 3, "outcome": "ok"},
            {"name": "me.a", "hash": "ab12", "ms": 4, "outcome": "error", "error_kind": "timeout"},
            {"name": "me.b", "hash": "cd34", "ms": 5, "outcome": "error", "error_kind": "denied"},
        ):
            await roost.audit.emit("tool.called", "local", details)
        failed = {"entry": 1, "channel": "telegram", "attempts": 2, "error": "network"}
        await roost.audit.emit("outbox.failed", "local", failed)
        await roost.audit.emit("outbox.failed", "local", {**failed, "channel": "web"})
        after = await scrape(http)
    assert after['roost_tool_calls_total{outcome="ok"}'] == 1
    assert after['roost_tool_calls_total{outcome="error"}'] == 2
    assert after['roost_tool_failures_total{kind="timeout"}'] == 1
    assert after['roost_tool_failures_total{kind="denied"}'] == 1
    assert after['roost_telegram_send_failures_total{kind="outbox"}'] == 1


def test_histogram_buckets_are_cumulative_and_labels_escaped() -> None:
    metrics = Metrics()
    for value in (0.01, 0.3, 0.3, 7.0, 500.0):
        metrics.observe("roost_turn_seconds", value)
    metrics.count("roost_tool_failures_total", kind='a"b\\c\nd')
    got = samples(metrics.render())
    assert got['roost_turn_seconds_bucket{le="0.05"}'] == 1
    assert got['roost_turn_seconds_bucket{le="0.5"}'] == 3
    assert got['roost_turn_seconds_bucket{le="10"}'] == 4
    assert got['roost_turn_seconds_bucket{le="120"}'] == 4
    assert got['roost_turn_seconds_bucket{le="+Inf"}'] == 5
    assert got["roost_turn_seconds_sum"] == pytest.approx(507.61)
    assert got['roost_tool_failures_total{kind="a\\"b\\\\c\\nd"}'] == 1
    assert json.dumps(got)  # plain numbers only

"""HTTP tricks of a hostile model server: slow bodies, keep-alive floods, odd headers, redirects.

A JSON answer that trickles in for longer than `timeout_s` arrives whole
(the timeout is about silence); a stream of nothing but `: ping` comments
fails with the timeout reply after `timeout_s` instead of holding the turn
forever; `Retry-After: nan`, `inf` or a negative number is ignored (roost's
own backoff applies); a 3xx to another server is never followed (that
server sees nothing: chat, Anthropic, embeddings, speech), and the person
reads a configuration error while the log names only the other server's
host and port. A caller that is slow between reads is not a silent server. Real servers on
127.0.0.1; the slow server is paced by short sleeps but every assertion
holds however long they stretch.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from aiohttp import web

from bridge.llm.audio import AudioClient, AudioError, AudioServer
from bridge.llm.embeddings import EmbeddingsClient
from bridge.recall.embedder import EmbedError
from bridge.types.backend import BackendError, Finish, TextDelta
from tests.fakes.fake_openai import Status, Text
from tests.llm.hostile import Hostile, collect_anthropic, frame, sse_head, write
from tests.llm.support import REQUEST, collect


async def test_a_json_body_that_keeps_trickling_is_not_cut(make_backend):
    """Whitespace every 50 ms until more than twice `timeout_s` passed, then the completion."""
    timeout_s = 0.5
    took: list[float] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        loop = asyncio.get_running_loop()
        began = loop.time()
        while loop.time() - began < 2 * timeout_s:
            if not await write(resp, b" "):
                return resp
            await asyncio.sleep(0.05)
        took.append(loop.time() - began)
        message = {"role": "assistant", "content": "slow but whole"}
        await write(resp, json.dumps({"choices": [{"index": 0, "message": message}]}).encode())
        await resp.write_eof()
        return resp

    async with Hostile(handler) as server:
        events = await collect(make_backend(base_url=server.base_url, timeout_s=timeout_s))
    assert took and took[0] >= 2 * timeout_s  # the body took longer than the timeout
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("slow but whole")]
    assert isinstance(events[-1], Finish)


async def test_only_keep_alive_comments_end_in_the_timeout_reply(make_backend):
    """Comments every 20 ms (for 10 s at least) after the first chunk: no answer; cut
    after ten timeouts of keep-alives alone."""
    sent: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        if not await write(resp, frame({"role": "assistant", "content": ""})):
            return resp
        for n in range(500):
            if not await write(resp, b": ping\n\n"):
                sent.append(n)
                return resp
            await asyncio.sleep(0.02)
        sent.append(500)
        return resp  # ends without a finish: "the stream ended early"

    async with Hostile(handler) as server:
        backend = make_backend(base_url=server.base_url, timeout_s=0.3, max_retries=0)
        with pytest.raises(BackendError) as info:
            await collect(backend)
    assert info.value.kind == "timeout", info.value.user_message
    assert "only keep-alives, no answer, for 3s" in info.value.user_message  # 10 timeouts


async def test_events_that_say_nothing_end_in_the_timeout_reply(make_backend):
    """`data:` events with empty deltas every 20 ms, forever: bytes, even data, but no
    text and no tool call. They count as keep-alives: cut after ten timeouts (they
    had held the turn for good, the typing indicator on)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        for _ in range(10_000):
            if not await write(resp, frame({})):
                return resp
            await asyncio.sleep(0.02)
        return resp

    async with Hostile(handler) as server:
        backend = make_backend(base_url=server.base_url, timeout_s=0.3, max_retries=0)
        with pytest.raises(BackendError) as info:
            await collect(backend)
    assert info.value.kind == "timeout", info.value.user_message
    assert "only keep-alives, no answer, for 3s" in info.value.user_message


async def test_anthropic_pings_alone_end_in_the_timeout_reply() -> None:
    """Anthropic's `ping` events (and a message_start) every 20 ms, no content block."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        start = {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}
        await write(resp, b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n")
        for _ in range(10_000):
            if not await write(resp, b'event: ping\ndata: {"type": "ping"}\n\n'):
                return resp
            await asyncio.sleep(0.02)
        return resp

    async with Hostile(handler) as server:
        with pytest.raises(BackendError) as info:
            await collect_anthropic(server.origin, timeout_s=0.3, max_retries=0)
    assert info.value.kind == "timeout", info.value.user_message
    assert "only keep-alives, no answer, for 3s" in info.value.user_message


async def test_keep_alives_while_a_model_thinks_are_waited_for(make_backend):
    """OpenRouter sends comments while a model thinks for minutes: past `timeout_s` of
    comments alone (and within ten of them) the answer that follows still comes."""
    timeout_s = 1.5

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        loop = asyncio.get_running_loop()
        until = loop.time() + 2 * timeout_s + 0.2
        while loop.time() < until:  # the server's own clock: longer than the timeout
            if not await write(resp, b": OPENROUTER PROCESSING\n\n"):
                return resp
            await asyncio.sleep(0.02)
        for data in (frame({"content": "thought it through"}), frame({}, "stop")):
            await write(resp, data)
        await write(resp, b"data: [DONE]\n\n")
        return resp

    async with Hostile(handler) as server:
        events = await collect(make_backend(base_url=server.base_url, timeout_s=timeout_s))
    assert events[0] == TextDelta("thought it through") and isinstance(events[-1], Finish)


async def test_comments_between_real_chunks_do_not_hurt(make_backend):
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        for data in (b": hello\n\n", frame({"content": "a "}), b": ping\n", frame({}, "stop")):
            if not await write(resp, data):
                return resp
        await write(resp, b"data: [DONE]\n\n")
        return resp

    async with Hostile(handler) as server:
        events = await collect(make_backend(base_url=server.base_url, timeout_s=5))
    assert events[0] == TextDelta("a ") and isinstance(events[-1], Finish)


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "1e3"])
async def test_a_retry_after_that_is_no_number_of_seconds_is_ignored(
    fake, make_backend, sleeps, value
):
    fake.script(Status(503, retry_after=value), Text("ok"))
    events = await collect(make_backend(backoff_base_s=0.01, max_backoff_s=30))
    assert TextDelta("ok") in events
    assert len(sleeps.delays) == 1
    assert 0.005 <= sleeps.delays[0] <= 0.01  # roost's own first backoff, with jitter


def _redirecting(to: str):
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=307, headers={"Location": to})

    return handler


async def _elsewhere(request: web.Request) -> web.StreamResponse:
    if request.path.endswith("/embeddings"):
        return web.json_response({"data": [{"index": 0, "embedding": [0.5, 0.5]}]})
    resp = await sse_head(request)
    for data in (frame({"content": "stolen"}), frame({}, "stop"), b"data: [DONE]\n\n"):
        await write(resp, data)
    return resp


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_not_followed_and_names_only_the_host(make_backend, caplog, status):
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    async with Hostile(_elsewhere) as other:
        target = f"{other.origin}/steal/v1/chat/completions?token=s3cret-query"

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(status=status, headers={"Location": target})

        async with Hostile(handler) as server:
            with pytest.raises(BackendError) as info:
                await collect(make_backend(base_url=server.base_url))
            assert server.hits == 1  # a configuration error is not retried
    assert other.hits == 0
    error = info.value
    assert error.kind == "config"
    assert f"redirect (HTTP {status})" in error.user_message
    assert "ROOST_LLM__BASE_URL" in error.user_message
    assert "127.0.0.1" not in error.user_message
    host = other.origin.removeprefix("http://")
    logged = caplog.text
    assert f"redirect to {host}" in logged
    assert "/steal" not in logged and "s3cret-query" not in logged


async def test_the_anthropic_backend_does_not_follow_a_redirect(caplog):
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    async with Hostile(_elsewhere) as other:
        redirect = _redirecting(f"{other.origin}/v1/messages?k=1")
        async with Hostile(redirect) as server:
            with pytest.raises(BackendError) as info:
                await collect_anthropic(server.origin)
    assert other.hits == 0
    assert info.value.kind == "config"
    assert f"redirect to {other.origin.removeprefix('http://')}" in caplog.text


async def test_embeddings_do_not_follow_a_redirect():
    async with Hostile(_elsewhere) as other:
        redirect = _redirecting(f"{other.origin}/v1/embeddings?k=1")
        async with Hostile(redirect) as server:
            client = EmbeddingsClient(server.base_url, "sk-embed", "embed-model")
            try:
                with pytest.raises(EmbedError) as info:
                    await client.embed(["a private note"])
            finally:
                await client.aclose()
    assert other.hits == 0
    message = str(info.value)
    assert other.origin.removeprefix("http://") in message
    assert "/v1/embeddings" not in message and "k=1" not in message


async def test_a_slow_reader_between_chunks_is_not_a_silent_server(make_backend):
    """Time the caller spends between reads (a tool running, say) is not the server's silence."""

    sent = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = await sse_head(request)
        for data in (frame({"content": "one "}), frame({"content": "two"}), frame({}, "stop")):
            if not await write(resp, data):
                return resp
        await write(resp, b"data: [DONE]\n\n")
        sent.set()  # everything is on its way: the client's next reads wait for nothing
        return resp

    async with Hostile(handler) as server:
        backend = make_backend(base_url=server.base_url, timeout_s=2.0)
        events = []
        async for event in backend.stream(REQUEST):
            events.append(event)
            if len(events) == 1:
                await sent.wait()
                await asyncio.sleep(2.5)  # the caller's own time, past timeout_s, once
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("one "), TextDelta("two")]
    assert isinstance(events[-1], Finish)


async def test_spoken_answers_do_not_follow_a_redirect(caplog):
    caplog.set_level(logging.WARNING, logger="bridge.llm")
    async with Hostile(_elsewhere) as other:
        redirect = _redirecting(f"{other.origin}/v1/audio/speech?k=1")
        async with Hostile(redirect) as server:
            audio = AudioServer("speech", server.base_url, "sk-audio", "tts-model", 10.0, 0)
            client = AudioClient(audio)
            try:
                with pytest.raises(AudioError) as info:
                    await client.speak("the private answer", "alloy")
            finally:
                await client.aclose()
    assert other.hits == 0
    assert "redirect (HTTP 307)" in info.value.reply and "[llm.speech]" in info.value.reply
    assert "127.0.0.1" not in info.value.reply
    assert f"redirect to {other.origin.removeprefix('http://')}" in caplog.text
    assert "k=1" not in caplog.text

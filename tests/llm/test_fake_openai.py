"""The fake OpenAI server itself: protocol shape, auth, models, defaults."""

from __future__ import annotations

import json

import aiohttp

from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls

BODY = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}


async def test_streaming_follows_the_chunk_protocol():
    async with FakeOpenAI() as fake, aiohttp.ClientSession() as http:
        fake.script(ToolCalls([Call("f", {"x": 1}, id="call_1")]))
        body = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
        async with http.post(f"{fake.base_url}/chat/completions", json=body) as resp:
            assert resp.content_type == "text/event-stream"
            raw = await resp.text()
    frames = [line[6:] for line in raw.split("\n\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    first_call = chunks[1]["choices"][0]["delta"]["tool_calls"][0]
    assert first_call == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
    }
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    pieces = [
        c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in chunks[2:-2]
    ]
    assert len(pieces) > 1 and json.loads("".join(pieces)) == {"x": 1}


async def test_non_streaming_request_gets_a_completion_and_default_echo():
    async with FakeOpenAI() as fake, aiohttp.ClientSession() as http:
        async with http.post(f"{fake.base_url}/chat/completions", json=BODY) as resp:
            data = await resp.json()
        async with http.get(f"{fake.base_url}/models") as resp:
            models = await resp.json()
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["message"]["content"] == "echo: ping"
    assert data["choices"][0]["finish_reason"] == "stop"
    assert models["data"][0]["id"] == "fake-model"
    assert fake.requests == [BODY]


async def test_key_and_model_checks_answer_like_openai():
    async with FakeOpenAI(api_key="k1", models=["m"]) as fake, aiohttp.ClientSession() as http:
        url = f"{fake.base_url}/chat/completions"
        async with http.post(url, json=BODY) as resp:
            assert resp.status == 401
            assert (await resp.json())["error"]["code"] == "invalid_api_key"
        headers = {"Authorization": "Bearer k1"}
        async with http.post(url, json={**BODY, "model": "x"}, headers=headers) as resp:
            assert resp.status == 404
            assert (await resp.json())["error"]["code"] == "model_not_found"
        fake.responder = lambda body: Text("custom")
        async with http.post(url, json=BODY, headers=headers) as resp:
            assert (await resp.json())["choices"][0]["message"]["content"] == "custom"
    assert len(fake.requests) == 3

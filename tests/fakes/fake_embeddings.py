"""A fake OpenAI-compatible embeddings server on 127.0.0.1 (`POST /v1/embeddings`).

It answers as OpenAI does: `{"object": "list", "data": [{"object":
"embedding", "index", "embedding"}], "model", "usage"}`, with the data in
REVERSE input order (the `index` field is what puts them back, as the
protocol allows). Vectors are deterministic: each lower-cased word is
replaced by its entry in `synonyms` (the "meaning" a real model would see),
then hashed into one of `dims` buckets (or `dimensions` when the request asks
for it). 401 without the configured key, 400 for a body without `model` or
`input`, 404 for a model not in `models` (when set). `script(*statuses)`
makes the next requests fail with those statuses (a `Retry-After: 0` on
429); `requests` records each JSON body, `hold` (an asyncio.Event, set by
default) keeps answers back until it is set.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import deque
from typing import Any

from aiohttp import web

WORD = re.compile(r"\w+")


def fake_vector(text: str, dims: int, synonyms: dict[str, str]) -> list[float]:
    vector = [0.0] * dims
    for word in WORD.findall(text.lower()):
        word = synonyms.get(word, word)
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vector[h % dims] += 1.0
    return vector


class FakeEmbeddings:
    def __init__(
        self,
        key: str | None = "sk-embed",
        dims: int = 64,
        synonyms: dict[str, str] | None = None,
        models: frozenset[str] | None = None,
    ) -> None:
        self.key = key
        self.dims = dims
        self.synonyms = synonyms or {}
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.hold = asyncio.Event()
        self.hold.set()
        self._failures: deque[int] = deque()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def script(self, *statuses: int) -> None:
        self._failures.extend(statuses)

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _embeddings(self, request: web.Request) -> web.Response:
        if self.key is not None and request.headers.get("Authorization") != f"Bearer {self.key}":
            return _error(401, "Incorrect API key provided")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.")
        self.requests.append(body)
        await self.hold.wait()
        if self._failures:
            status = self._failures.popleft()
            headers = {"Retry-After": "0"} if status == 429 else {}
            return _error(status, "scripted failure", headers)
        model, texts = body.get("model"), body.get("input")
        if not isinstance(model, str) or texts is None:
            return _error(400, "you must provide a model and an input")
        if self.models is not None and model not in self.models:
            return _error(404, f"The model `{model}` does not exist")
        texts = [texts] if isinstance(texts, str) else texts
        dims = int(body.get("dimensions") or self.dims)
        data = [
            {"object": "embedding", "index": n, "embedding": fake_vector(t, dims, self.synonyms)}
            for n, t in enumerate(texts)
        ]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts)}
        usage["total_tokens"] = usage["prompt_tokens"]
        return web.json_response(
            {"object": "list", "data": data[::-1], "model": model, "usage": usage}
        )


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(body, status=status, headers=headers)

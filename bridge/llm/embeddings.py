"""An OpenAI-compatible embeddings endpoint over aiohttp (`[llm.embeddings]`): recall's vectors.

`POST {base_url}/embeddings` with `{"model", "input": [texts], "encoding_format":
"float"}` (plus `dimensions` when configured: OpenAI's v3 models shorten
their vectors on request) answers `{"data": [{"index", "embedding"}]}`; the
vectors are put back in input order. OpenAI, Ollama (`/v1`), vLLM, llama.cpp's
server, LM Studio and text-embeddings-inference speak it. 429, 5xx and
connection errors are retried with backoff (`Retry-After` honoured, capped);
anything else is an `EmbedError` naming the status, never the texts (they
are masked before they are stored, and only stored texts are embedded).
Redirects are not followed (the texts would go to wherever a 3xx points): a
3xx is an `EmbedError` naming only the Location's host and port.
`embeddings_server` resolves the table: base_url and api_key default to
[llm]'s OpenAI-compatible server and key, as the audio endpoints do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bridge.core.config_sections import DefaultLLMSettings
from bridge.llm.audio import Sleep, chat_server
from bridge.llm.http_retry import (
    connection_detail,
    redirect_target,
    retry_after_seconds,
    safe_host,
)
from bridge.recall.embedder import EmbedError

if TYPE_CHECKING:  # aiohttp is imported when the first request is made
    import aiohttp

log = logging.getLogger(__name__)
MAX_ANSWER = 64 * 1024 * 1024  # bytes of one answer read at most
RETRY_AFTER_CAP_S = 30.0


class EmbeddingsClient:
    """One embeddings server; the session is made on first use and closed by `aclose`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dimensions: int | None = None,
        *,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        session: aiohttp.ClientSession | None = None,
        sleep: Sleep = asyncio.sleep,
        backoff_s: float = 0.5,
    ) -> None:
        self.base_url = base_url
        self.name = f"{model}@{dimensions}" if dimensions else model
        self._key = api_key
        self._model = model
        self._dimensions = dimensions
        self._timeout = timeout_s
        self._retries = max_retries
        self._session = session
        self._own = session is None
        self._sleep = sleep
        self._backoff = backoff_s

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body: dict[str, object] = {
            "model": self._model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self._dimensions:
            body["dimensions"] = self._dimensions
        failures = 0
        while True:
            try:
                return parse_embeddings(await self._once(body), len(texts))
            except _Retry as exc:
                failures += 1
                if failures > self._retries:
                    raise EmbedError(
                        f"the embeddings server is unavailable ({exc.detail})"
                    ) from None
                delay = exc.wait if exc.wait is not None else self._backoff * 2 ** (failures - 1)
                log.warning(
                    "embeddings at %s: %s; retry %d", safe_host(self.base_url), exc.detail, failures
                )
                await self._sleep(min(delay, RETRY_AFTER_CAP_S))

    async def aclose(self) -> None:
        if self._own and self._session is not None:
            await self._session.close()
            self._session = None

    async def _once(self, body: dict[str, object]) -> object:
        import aiohttp  # here, not at start-up: `roost send /help` never needs it

        if self._session is None:
            self._session = aiohttp.ClientSession()
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        try:
            async with self._session.post(
                self.base_url + "/embeddings",
                json=body,
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
            ) as resp:
                if 300 <= resp.status < 400:
                    where = redirect_target(
                        self.base_url + "/embeddings", resp.headers.get("Location")
                    )
                    raise EmbedError(
                        f"the embeddings server answered HTTP {resp.status}, a redirect to "
                        f"{where} that roost does not follow: check [llm.embeddings] base_url"
                    )
                if resp.status == 429 or resp.status >= 500:
                    raise _Retry(
                        f"HTTP {resp.status}", retry_after_seconds(resp.headers.get("Retry-After"))
                    )
                if resp.status >= 400:
                    raise EmbedError(
                        f"the embeddings server answered HTTP {resp.status}: check "
                        "[llm.embeddings] base_url, model and api_key"
                    )
                if (resp.content_length or 0) > MAX_ANSWER:
                    raise EmbedError("the embeddings server sent an answer that is too large")
                return await resp.json(content_type=None)
        except TimeoutError:
            raise _Retry(f"no answer within {self._timeout:g} s", None) from None
        except aiohttp.ClientError as exc:
            raise _Retry(connection_detail(exc), None) from None
        except ValueError:
            raise EmbedError("the embeddings server sent an answer that is not JSON") from None


def parse_embeddings(answer: object, count: int) -> list[list[float]]:
    """The vectors of an `/embeddings` answer in input order; EmbedError when malformed."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or len(data) != count:
        raise EmbedError("the embeddings server sent an answer without one vector per text")
    out: list[list[float] | None] = [None] * count
    for n, item in enumerate(data):
        if not isinstance(item, dict):
            raise EmbedError("the embeddings server sent a malformed vector")
        at, vector = item.get("index", n), item.get("embedding")
        if not isinstance(at, int) or not 0 <= at < count or out[at] is not None:
            raise EmbedError("the embeddings server sent a vector out of place")
        if (
            not isinstance(vector, list)
            or not vector
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
        ):
            raise EmbedError("the embeddings server sent a malformed vector")
        out[at] = [float(x) for x in vector]
    dims = {len(v) for v in out if v is not None}
    if len(dims) != 1:
        raise EmbedError("the embeddings server sent vectors of different sizes")
    return [v for v in out if v is not None]


def embeddings_client(llm: DefaultLLMSettings) -> EmbeddingsClient | None:
    """The configured client, or None (off, or no server to default to)."""
    table = llm.embeddings
    if not table.enabled:
        return None
    key = table.api_key.get_secret_value().strip() if table.api_key else ""
    url = table.base_url
    if url is None:
        url = chat_server(llm)
        if url is None:
            return None
        if not key and llm.api_key is not None:  # the same server: the same key
            key = llm.api_key.get_secret_value().strip()
    return EmbeddingsClient(
        url,
        key or None,
        table.model,
        table.dimensions,
        timeout_s=table.timeout_s,
        max_retries=table.max_retries,
    )


class _Retry(Exception):
    def __init__(self, detail: str, wait: float | None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.wait = wait

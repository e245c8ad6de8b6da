"""The `openai` backend: any OpenAI-compatible chat-completions server.

Works with OpenAI, Ollama (`http://127.0.0.1:11434/v1`), vLLM, llama.cpp's
server and OpenRouter. One `POST {base_url}/chat/completions` per model call,
streamed as Server-Sent Events; a server that ignores `stream: true` and
answers `application/json` is accepted too.

Failures become `BackendError` with a short message for the person that names
no host, port, URL or path and quotes nothing the server said; the full story
(server address, status, the server's own message) goes to the log under a
reference the message repeats (`http_retry.reported`). 429, 5xx
and connection errors are retried with exponential backoff and jitter
(honouring `Retry-After`), but only while nothing has been yielded yet: half an
answer is never replayed. Timeouts: `timeout_s` bounds the whole call
(retries included), `idle_timeout_s` bounds the silence between two chunks
once the answer has started, `connect_timeout_s` the TCP connect. The API key
is sent in the `Authorization` header and nowhere else: it never appears in a
message or a log line.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from bridge.llm.faults import ServerFault, reported
from bridge.llm.http_retry import (
    Retry,
    connection_detail,
    retry_after_seconds,
    safe_host,
)
from bridge.llm.openai_wire import (
    StreamAssembler,
    bad_response,
    build_body,
    completion_events,
    parse_json,
    server_error_message,
)
from bridge.llm.sse import SSEDecoder, SSEError
from bridge.types.backend import BackendError, ModelEvent, ModelRequest

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[Any]]


class OpenAIBackend:
    """Chat completions over aiohttp; one instance serves every chat."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        timeout_s: float = 120,
        connect_timeout_s: float = 10,
        idle_timeout_s: float = 60,
        max_retries: int = 3,
        backoff_base_s: float = 1.0,
        max_backoff_s: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/chat/completions"
        self._host = safe_host(base_url)
        self._api_key = api_key or None
        self._model = model
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self._max_retries = max(0, max_retries)
        self._backoff_base_s = backoff_base_s
        self._max_backoff_s = max_backoff_s
        self._session = session
        self._owns_session = session is None
        self._sleep = sleep
        self._rng = rng or random.Random()

    def describe(self) -> str:
        """Provider and model, for /status: the server's address stays in the log."""
        return f"openai model={self._model}"

    def server(self) -> str:
        """`host[:port]` of the model server, for the operator's log."""
        return self._host

    async def aclose(self) -> None:
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            async with aclosing(self._stream(request)) as events:
                async for event in events:
                    yield event
        except BackendError as exc:
            raise reported(exc, self._host, self._redact) from exc

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        body = build_body(self._model, request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        attempt = 0
        while True:
            yielded = False
            try:
                async with aclosing(self._attempt(body, deadline)) as events:
                    async for event in events:
                        yielded = True
                        yield event
                return
            except Retry as exc:
                if yielded:
                    raise ServerFault(
                        "unavailable",
                        "the connection to the model server broke mid-answer; please ask again",
                        f"{exc.detail} after the answer had started",
                    ) from exc
                if attempt >= self._max_retries:
                    raise self._exhausted(exc, attempt + 1) from exc
                delay = self._delay(attempt, exc.retry_after)
                if loop.time() + delay >= deadline:
                    raise self._exhausted(exc, attempt + 1) from exc
                log.warning(
                    "model server %s: %s; retry %d/%d in %.2fs",
                    self._host,
                    exc.detail,
                    attempt + 1,
                    self._max_retries,
                    delay,
                )
                await self._sleep(delay)
                attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._max_backoff_s)
        ceiling = min(self._max_backoff_s, self._backoff_base_s * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * self._rng.random())  # "equal jitter"

    def _exhausted(self, exc: Retry, attempts: int) -> BackendError:
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        detail = f"{exc.detail}, {tries}"
        if exc.kind == "rate_limited":
            return ServerFault(
                "rate_limited",
                f"the model server is rate-limiting requests ({detail}); try again in a minute",
                detail,
            )
        status = f"{exc.detail}, " if exc.detail.startswith("HTTP ") else ""
        return ServerFault(
            "unavailable",
            f"the model server cannot be reached right now ({status}{tries})",
            detail,
        )

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    sock_connect=self._connect_timeout_s,
                )
            )
        return self._session

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json", "User-Agent": "roost"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _redact(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text

    def _timed_out(self, idle: bool) -> BackendError:
        if idle:
            text = f"the model server went silent for {self._idle_timeout_s:g}s mid-answer"
        else:
            text = f"the model server did not answer within {self._timeout_s:g}s"
        return ServerFault("timeout", text, text)

    async def _attempt(
        self, body: dict[str, Any], deadline: float
    ) -> AsyncGenerator[ModelEvent, None]:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(deadline):
                response = await self._client().post(self._url, json=body, headers=self._headers())
        except TimeoutError as exc:
            raise self._timed_out(idle=False) from exc
        except aiohttp.ClientError as exc:
            raise Retry("unavailable", connection_detail(exc)) from exc
        async with response:
            if response.status >= 400:
                await self._raise_for_status(response, deadline)
            ctype = response.content_type or ""
            try:
                if "json" in ctype:
                    async with asyncio.timeout_at(deadline):
                        raw = await response.read()
                    for event in completion_events(parse_json(raw)):
                        yield event
                    return
                async with aclosing(self._sse(response, deadline, ctype)) as events:
                    async for event in events:
                        yield event
            except TimeoutError as exc:
                raise self._timed_out(idle=loop.time() < deadline - 0.001) from exc
            except aiohttp.ClientError as exc:
                raise Retry("unavailable", connection_detail(exc)) from exc

    async def _sse(
        self, response: aiohttp.ClientResponse, deadline: float, ctype: str
    ) -> AsyncGenerator[ModelEvent, None]:
        loop = asyncio.get_running_loop()
        decoder = SSEDecoder()
        assembler = StreamAssembler()
        done = False
        while not done:
            async with asyncio.timeout_at(min(deadline, loop.time() + self._idle_timeout_s)):
                chunk = await response.content.readany()
            try:
                datas = decoder.feed(chunk) if chunk else decoder.close()
            except SSEError as exc:
                raise self._not_a_stream(ctype, str(exc)) from exc
            for data in datas:
                if data.strip() == "[DONE]":
                    done = True
                    break
                for event in assembler.feed(parse_json(data)):
                    yield event
            if not chunk:
                break
        if not done and assembler.reason is None:
            if not decoder.saw_field:
                raise self._not_a_stream(ctype, "empty body")
            if assembler.saw_choice:
                raise Retry("unavailable", "the stream ended early")
        for event in assembler.finish():
            yield event

    def _not_a_stream(self, ctype: str, detail: str) -> BackendError:
        if "event-stream" in ctype:
            return bad_response(detail)
        return bad_response(
            f"{detail} (content type {ctype or 'none'}; is ROOST_LLM__BASE_URL "
            f"{self._base_url_safe()!r} right? OpenAI-compatible servers usually end in /v1)"
        )

    async def _raise_for_status(self, response: aiohttp.ClientResponse, deadline: float) -> None:
        status = response.status
        try:
            async with asyncio.timeout_at(deadline):
                text = (await response.read())[:4096].decode("utf-8", "replace")
        except (TimeoutError, aiohttp.ClientError):
            text = ""
        try:
            message = server_error_message(parse_json(text)) if text else None
        except BackendError:
            message = None
        detail = self._redact((message or text or response.reason or "").strip()[:300])
        if status == 429:
            raise Retry("rate_limited", "HTTP 429", self._retry_after(response))
        if status >= 500:
            raise Retry("unavailable", f"HTTP {status}", self._retry_after(response))
        if status in (401, 403):
            raise ServerFault(
                "auth",
                f"the model server rejected roost's API key (HTTP {status}); "
                "the operator should check ROOST_LLM__API_KEY",
                f"HTTP {status}: {detail or 'no reason given'}",
            )
        if status == 404:
            raise ServerFault(
                "not_found",
                f"the model server has no model {self._model!r} (HTTP 404); "
                "the operator should check ROOST_LLM__MODEL and ROOST_LLM__BASE_URL",
                f"{self._base_url_safe()} has no model {self._model!r} or no "
                f"/chat/completions (HTTP 404: {detail or 'not found'}); check "
                "ROOST_LLM__MODEL and ROOST_LLM__BASE_URL (usually ends in /v1)",
            )
        raise ServerFault(
            "bad_response",
            f"the model server refused the request (HTTP {status})",
            f"HTTP {status}: {detail or 'no reason given'}",
        )

    def _retry_after(self, response: aiohttp.ClientResponse) -> float | None:
        return retry_after_seconds(response.headers.get("Retry-After"))

    def _base_url_safe(self) -> str:
        parts = urlsplit(self._base_url)
        return f"{parts.scheme}://{self._host}{parts.path}" if parts.scheme else self._host

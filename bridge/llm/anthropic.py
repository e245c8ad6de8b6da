"""The `anthropic` backend: Anthropic's Messages API over aiohttp (no SDK).

One `POST {base_url}/v1/messages` per model step with `stream: true`, the
`x-api-key` and `anthropic-version: 2023-06-01` headers and `max_tokens`
(`[llm] max_output_tokens`). The body is built by `anthropic_wire`, the
streamed events read by `anthropic_events`; the byte-stable system prefix
carries `cache_control`, so cache reads are counted in `Finish.cached_tokens`.

Failures: 401/403 (the key), 404 (the model name), 400/402/413 (the request;
the API's own message is shown after `safe_message` took out links,
addresses and paths) are told at once; 429, 500 and 529 (overloaded) are
retried with backoff, honouring `retry-after`, while nothing has been
yielded yet (`http_stream.RetryLoop`); a 429 for a spend limit is not
retried. `timeout_s` is an inactivity timeout, as in the openai backend
(only `data:` lines restart it; a JSON body is read chunk by chunk, capped
at `MAX_JSON_BODY` bytes after decompression). Redirects are not followed:
a 3xx is a `config` error naming only the Location's host in the log.
The key is sent in its header only and redacted from every log line.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from bridge.llm.anthropic_events import EventReader, bad_response, message_events
from bridge.llm.anthropic_wire import build_body, error_fields, safe_message
from bridge.llm.faults import ServerFault, reported, setting, which
from bridge.llm.http_retry import (
    Retry,
    connection_detail,
    redirect_target,
    retry_after_seconds,
    safe_host,
)
from bridge.llm.http_stream import (
    IdleTimer,
    RetryLoop,
    Sleep,
    TooLarge,
    read_body,
    unavailable_text,
    within,
)
from bridge.llm.sse import SSEDecoder, SSEError
from bridge.types.backend import BackendError, ModelEvent, ModelRequest

if TYPE_CHECKING:  # aiohttp is imported when a request is made
    import aiohttp

DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_JSON_BODY = 64 * 1024 * 1024  # bytes of a non-streamed answer, decompressed
MAX_ERROR_BODY = 64 * 1024  # bytes of an error body read for the log
API_VERSION = "2023-06-01"


def messages_url(base_url: str) -> str:
    """`.../v1/messages` for a base with or without the `/v1`."""
    base = base_url.rstrip("/")
    return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"


def exhausted(exc: Retry, attempts: int) -> BackendError:
    tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
    detail = f"{exc.detail}, {tries}"
    if exc.kind == "overloaded":
        text = f"Anthropic's API is overloaded right now ({tries}); try again in a minute"
        return ServerFault("unavailable", text, detail)
    if exc.kind == "rate_limited":
        text = f"Anthropic is rate-limiting roost's API key ({tries}); try again in a minute"
        return ServerFault("rate_limited", text, detail)
    return ServerFault(
        "unavailable", unavailable_text(exc.detail, attempts, "the Anthropic API"), detail
    )


class AnthropicBackend:
    """Claude models through the Messages API; one instance serves every chat."""

    name = "anthropic"

    def __init__(
        self,
        api_key: str | None,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        max_output_tokens: int = 4096,
        timeout_s: float = 120,
        connect_timeout_s: float = 10,
        max_retries: int = 3,
        backoff_base_s: float = 1.0,
        max_backoff_s: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        table: str | None = None,
    ) -> None:
        """`table`: the [models.NAME] this model is configured in (None: [llm])."""
        self._table = table
        self._url = messages_url(base_url)
        self._host = safe_host(base_url)
        self._api_key = api_key or ""
        self._model = model
        self._max_tokens = max_output_tokens
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._session = session
        self._owns_session = session is None
        self._retry = RetryLoop(
            self._host, max_retries, backoff_base_s, max_backoff_s, sleep, rng or random.Random()
        )
        self._retry.exhausted = exhausted

    def describe(self) -> str:
        return f"anthropic model={self._model}"

    def server(self) -> str:
        return self._host

    async def aclose(self) -> None:
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        body = build_body(self._model, request, self._max_tokens)
        try:
            async with aclosing(self._retry.run(lambda: self._attempt(body))) as events:
                async for event in events:
                    yield event
        except BackendError as exc:
            raise reported(exc, self._host, self._redact, which(self._model, self._table)) from exc

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout_s)
            )
        return self._session

    def _headers(self) -> dict[str, str]:
        return {
            "x-api-key": self._api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
            "user-agent": "roost",
        }

    async def _attempt(self, body: dict[str, Any]) -> AsyncGenerator[ModelEvent, None]:
        import aiohttp

        post = self._client().post(
            self._url, json=body, headers=self._headers(), allow_redirects=False
        )
        try:
            response = await within(self._timeout_s, False, post)
        except aiohttp.ClientError as exc:
            raise Retry("unavailable", connection_detail(exc)) from exc
        async with response:
            if 300 <= response.status < 400:
                where = redirect_target(self._url, response.headers.get("Location"))
                raise ServerFault(
                    "config",
                    f"the Anthropic API answered with a redirect (HTTP {response.status}), "
                    "which roost does not follow; the operator should check "
                    + setting(self._table, "base_url"),
                    f"HTTP {response.status} redirect to {where}, not followed",
                )
            if response.status >= 400:
                await self._raise_for_status(response)
            try:
                if "json" in (response.content_type or ""):
                    try:
                        raw = await read_body(response, self._timeout_s, True, MAX_JSON_BODY)
                    except TooLarge as exc:
                        raise bad_response(f"the JSON reply: {exc}") from exc
                    for event in message_events(_json(raw)):
                        yield event
                    return
                async with aclosing(self._sse(response)) as events:
                    async for event in events:
                        yield event
            except aiohttp.ClientError as exc:
                raise Retry("unavailable", connection_detail(exc)) from exc

    async def _sse(self, response: aiohttp.ClientResponse) -> AsyncGenerator[ModelEvent, None]:
        decoder = SSEDecoder()
        reader = EventReader()
        idle = IdleTimer(self._timeout_s)
        while not reader.stopped:
            chunk = await idle.read(response)
            try:
                datas = decoder.feed(chunk) if chunk else decoder.close()
            except SSEError as exc:
                raise bad_response(str(exc)) from exc
            for data in datas:
                for event in reader.feed(_json(data)):
                    idle.progress()  # said something: pings and empty events alone are not
                    yield event
            if not chunk:
                break
        if not reader.stopped:
            if not reader.started:
                raise bad_response("the stream had no message_start")
            raise Retry("unavailable", "the stream ended before message_stop")
        for event in reader.finish():
            yield event

    async def _raise_for_status(self, response: aiohttp.ClientResponse) -> None:
        import aiohttp

        status = response.status
        raw = b""
        try:
            raw = (
                await read_body(response, self._timeout_s, False, MAX_ERROR_BODY, truncate=True)
            )[:8192]
            fields = error_fields(_json(raw))
        except (BackendError, aiohttp.ClientError):
            fields = None
        kind, message = fields or ("", response.reason or "")
        spend_limit = b"spend_limit" in raw or "spend limit" in message.lower()
        detail = self._redact(f"HTTP {status} {kind}: {message}".strip()[:400])
        retry_after = retry_after_seconds(response.headers.get("retry-after"))
        if status == 429 and not spend_limit:
            raise Retry("rate_limited", detail, retry_after)
        if status == 529 or kind == "overloaded_error":
            raise Retry("overloaded", detail, retry_after)
        if status >= 500:
            raise Retry("unavailable", detail, retry_after)
        raise self._refusal(status, kind, self._redact(message), detail)

    def _refusal(self, status: int, kind: str, message: str, detail: str) -> BackendError:
        said = safe_message(message)
        if status == 401:
            text = (
                "Anthropic rejected roost's API key (HTTP 401); "
                f"the operator should check {setting(self._table, 'api_key')}"
            )
            return ServerFault("auth", text, detail)
        if status == 403:
            text = (
                f"Anthropic refused this API key access (HTTP 403: {said or kind}); the "
                "operator should check the key's permissions"
            )
            return ServerFault("auth", text, detail)
        if status == 404:
            text = (
                f"Anthropic has no model {self._model!r} (HTTP 404); "
                f"the operator should check {setting(self._table, 'model')}"
            )
            return ServerFault("not_found", text, f"{detail} (POST {self._url})")
        text = f"Anthropic refused the request (HTTP {status}: {said or kind or 'no reason given'})"
        return ServerFault("bad_response", text, detail)


def _json(raw: str | bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_response("bad JSON") from exc
    except RecursionError as exc:
        raise bad_response("JSON nested too deep") from exc

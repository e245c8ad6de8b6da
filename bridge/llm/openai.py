"""The `openai` backend: any OpenAI-compatible chat-completions server.

Works with OpenAI, Ollama (`http://127.0.0.1:11434/v1`), vLLM, llama.cpp's
server and OpenRouter. One `POST {base_url}/chat/completions` per model call,
streamed as Server-Sent Events; a server that ignores `stream: true` and
answers `application/json` is accepted too.

Failures become `BackendError` with a short message for the person that names
no host, port, URL or path and quotes nothing the server said; the full story
(server address, status, the server's own message) goes to the log under a
reference the message repeats (`faults.reported`). 429, 5xx and connection
errors are retried (`http_stream.RetryLoop`), but only while nothing has been
yielded yet. `timeout_s` is an inactivity timeout: the call fails when no
byte arrives for that long (waiting for the headers or for the next piece of
the answer, streamed or a JSON body read chunk by chunk); a slow answer that
keeps coming is never cut off. In a stream only `data:` lines count as the
server answering: a server that sends nothing but `: keep-alive` comments
for `timeout_s` fails the same way instead of holding the turn forever.
`connect_timeout_s` bounds the TCP connect. The API key is sent in the
`Authorization` header and nowhere else: it never appears in a message or a
log line.

Redirects are never followed (a 307 would re-send the system prompt, the
history and the key to wherever it points): a 3xx is a `config` error whose
log line names the Location's host and port, never its path or query. Sizes
are capped: a JSON body at `MAX_JSON_BODY` bytes after decompression (an
error body at `MAX_ERROR_BODY`), an SSE line and event as `sse` caps them,
the answer and each tool call as `openai_wire` caps them; past a cap, or for
JSON nested too deep, the person reads "the model server sent a reply roost
could not read".
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bridge.llm.faults import ServerFault, reported, setting, which
from bridge.llm.http_retry import (
    Retry,
    connection_detail,
    redirect_target,
    retry_after_seconds,
    safe_host,
)
from bridge.llm.http_stream import IdleTimer, RetryLoop, Sleep, TooLarge, read_body, within
from bridge.llm.openai_wire import (
    StreamAssembler,
    bad_response,
    build_body,
    completion_events,
    completion_reasoning,
    parse_json,
    server_error_code,
    server_error_message,
)
from bridge.llm.sse import SSEDecoder, SSEError
from bridge.llm.think import MAX_THINK_CHARS, ThinkBlock, ThinkTooLong
from bridge.types.backend import BackendError, Finish, ModelEvent, ModelRequest, TextDelta

NO_QUOTA = "insufficient_quota"  # OpenAI's 429 code for an account without credit

if TYPE_CHECKING:  # aiohttp is imported when a request is made
    import aiohttp

MAX_JSON_BODY = 64 * 1024 * 1024  # bytes of a non-streamed answer, decompressed
MAX_ERROR_BODY = 64 * 1024  # bytes of an error body read for the log


# said when a leading <think> block never closes (`ThinkBlock`'s own limit)
THINK_LOOP = f"the model kept reasoning past {MAX_THINK_CHARS:,} characters without an answer"


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
        max_retries: int = 3,
        backoff_base_s: float = 1.0,
        max_backoff_s: float = 30.0,
        session: aiohttp.ClientSession | None = None,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        table: str | None = None,
    ) -> None:
        """`table`: the [models.NAME] this model is configured in (None: [llm]), for what
        the operator is told to check."""
        self._table = table
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/chat/completions"
        self._host = safe_host(base_url)
        self._api_key = api_key or None
        self._model = model
        self._timeout_s = timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._session = session
        self._owns_session = session is None
        self._retry = RetryLoop(
            self._host, max_retries, backoff_base_s, max_backoff_s, sleep, rng or random.Random()
        )

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
        body = build_body(self._model, request)
        think = ThinkBlock()  # a reasoning model's leading <think> block is not the answer
        try:
            async with aclosing(self._retry.run(lambda: self._attempt(body, think))) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        try:
                            shown = think.feed(event.text)
                        except ThinkTooLong as exc:
                            raise ServerFault("bad_response", THINK_LOOP, str(exc)) from None
                        if shown:
                            yield TextDelta(shown)
                        continue
                    if isinstance(event, Finish):
                        held = think.finish()
                        if held:
                            yield TextDelta(held)
                    yield event
        except BackendError as exc:
            raise reported(exc, self._host, self._redact, which(self._model, self._table)) from exc

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout_s)
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

    async def _attempt(
        self, body: dict[str, Any], think: ThinkBlock
    ) -> AsyncGenerator[ModelEvent, None]:
        """One request; `think` is told when the server sends the reasoning apart."""
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
                raise self._redirected(response)
            if response.status >= 400:
                await self._raise_for_status(response)
            ctype = response.content_type or ""
            try:
                if "json" in ctype:
                    try:
                        raw = await read_body(response, self._timeout_s, True, MAX_JSON_BODY)
                    except TooLarge as exc:
                        raise bad_response(f"the JSON reply: {exc}") from exc
                    reply = parse_json(raw)
                    if completion_reasoning(reply):
                        think.apart()
                    for event in completion_events(reply):
                        yield event
                    return
                async with aclosing(self._sse(response, ctype, think)) as events:
                    async for event in events:
                        yield event
            except aiohttp.ClientError as exc:
                raise Retry("unavailable", connection_detail(exc)) from exc

    async def _sse(
        self, response: aiohttp.ClientResponse, ctype: str, think: ThinkBlock
    ) -> AsyncGenerator[ModelEvent, None]:
        decoder = SSEDecoder()
        assembler = StreamAssembler()
        idle = IdleTimer(self._timeout_s)
        done = False
        while not done:
            chunk = await idle.read(response)
            try:
                datas = decoder.feed(chunk) if chunk else decoder.close()
            except SSEError as exc:
                raise self._not_a_stream(ctype, str(exc)) from exc
            for data in datas:
                if data.strip() == "[DONE]":
                    done = True
                    break
                reasoned = assembler.reasoning
                events = assembler.feed(parse_json(data))
                if assembler.reasoning > reasoned:  # the reasoning apart: output, bounded
                    think.apart()  # (before this chunk's text reaches the filter)
                    idle.progress()
                    if assembler.reasoning > MAX_THINK_CHARS:
                        raise ServerFault("bad_response", THINK_LOOP, "reasoning_content")
                for event in events:
                    idle.progress()  # said something: empty events alone are keep-alives
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
            f"{detail} (content type {ctype or 'none'}; is {self._setting('base_url')} "
            f"{self._base_url_safe()!r} right? OpenAI-compatible servers usually end in /v1)"
        )

    def _redirected(self, response: aiohttp.ClientResponse) -> BackendError:
        status = response.status
        where = redirect_target(self._url, response.headers.get("Location"))
        return ServerFault(
            "config",
            f"the model server answered with a redirect (HTTP {status}), which roost does "
            f"not follow; the operator should check {self._setting('base_url')}",
            f"HTTP {status} redirect to {where}, not followed: set {self._setting('base_url')} to "
            "the address that answers itself",
        )

    async def _raise_for_status(self, response: aiohttp.ClientResponse) -> None:
        import aiohttp

        status = response.status
        try:
            raw = await read_body(response, self._timeout_s, False, MAX_ERROR_BODY, truncate=True)
            text = raw[:4096].decode("utf-8", "replace")
        except (BackendError, aiohttp.ClientError):
            text = ""
        try:
            body = parse_json(text) if text else None
        except BackendError:
            body = None
        message, code = server_error_message(body), server_error_code(body)
        detail = self._redact((message or text or response.reason or "").strip()[:300])
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
        if status == 429 and code == NO_QUOTA:  # no credit left: waiting will not help
            raise ServerFault(
                "rate_limited",
                "the model provider says roost's account has no quota left (HTTP 429 "
                f"{NO_QUOTA}); the operator should check the plan and billing",
                f"HTTP 429 {NO_QUOTA}: {detail or 'no reason given'}",
            )
        if status == 429:
            raise Retry("rate_limited", "HTTP 429", retry_after, detail)
        if status >= 500:
            raise Retry("unavailable", f"HTTP {status}", retry_after, detail)
        if status in (401, 403):
            raise ServerFault(
                "auth",
                f"the model server rejected roost's API key (HTTP {status}); "
                f"the operator should check {self._setting('api_key')}",
                f"HTTP {status}: {detail or 'no reason given'}",
            )
        if status == 404:
            raise ServerFault(
                "not_found",
                f"the model server has no model {self._model!r} (HTTP 404); "
                f"the operator should check {self._setting('model')} and "
                f"{self._setting('base_url')}",
                f"{self._base_url_safe()} has no model {self._model!r} or no "
                f"/chat/completions (HTTP 404: {detail or 'not found'}); check "
                f"{self._setting('model')} and {self._setting('base_url')} (usually ends in /v1)",
            )
        raise ServerFault(
            "bad_response",
            f"the model server refused the request (HTTP {status})",
            f"HTTP {status}: {detail or 'no reason given'}",
        )

    def _setting(self, key: str) -> str:
        return setting(self._table, key)

    def _base_url_safe(self) -> str:
        parts = urlsplit(self._base_url)
        return f"{parts.scheme}://{self._host}{parts.path}" if parts.scheme else self._host

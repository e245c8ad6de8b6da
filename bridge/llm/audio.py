"""OpenAI-compatible audio endpoints over aiohttp: transcription in, speech out.

`POST {base_url}/audio/transcriptions` is a multipart upload (`file` with a
file name whose extension names the format, `model`, `response_format=json`;
a `text` answer is accepted too), as OpenAI, Groq, faster-whisper-server
(speaches) and whisper.cpp's server (`--inference-path
/v1/audio/transcriptions`) take it. `POST {base_url}/audio/speech` is JSON
(`model`, `input`, `voice`, `response_format=opus`) answered with the raw
audio bytes; roost accepts only an OGG stream back (Telegram's voice format).

Where the servers are: `[llm.transcribe]` and `[llm.speech]`
(`audio_server`); an unset `base_url` means the chat backend's own server
when `[llm]` is an OpenAI-compatible one, and only then does the key default
to `[llm] api_key` as well (a key is never sent to a server it was not
configured for). 429, 5xx and connection errors are retried with backoff
(`Retry-After` honoured, capped); 401/403, 404, 413 and the rest become an
`AudioError` whose `reply` is a short sentence for the person that names the
config table to check and quotes nothing the server said. Redirects are not
followed (the audio or the text would go to wherever a 3xx points): a 3xx
is an `AudioError` naming the table, the log line the Location's host.
Neither the audio nor the text is ever logged: log lines carry the host,
the status and sizes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bridge.core.config_sections import DefaultLLMSettings, SpeechSettings, TranscribeSettings
from bridge.llm.http_retry import (
    connection_detail,
    redirect_target,
    retry_after_seconds,
    safe_host,
)
from bridge.llm.select import OPENAI_DEFAULT_BASE_URL

if TYPE_CHECKING:  # aiohttp is imported when a request is made
    import aiohttp

log = logging.getLogger(__name__)
Purpose = Literal["transcribe", "speech"]
MAX_TRANSCRIPT_BYTES = 1024 * 1024  # a JSON answer bigger than this is not a transcript
MAX_SPEECH_BYTES = 50 * 1024 * 1024  # what a Telegram bot may upload
RETRY_AFTER_CAP_S = 30.0
Sleep = Callable[[float], Awaitable[object]]


class AudioError(Exception):
    """An audio request that failed for good; `reply` is for the person, `kind` for audit."""

    def __init__(self, reply: str, kind: str = "failed") -> None:
        super().__init__(reply)
        self.reply = reply
        self.kind = kind


@dataclass(frozen=True, slots=True)
class AudioServer:
    purpose: Purpose
    base_url: str
    api_key: str | None
    model: str
    timeout_s: float = 60.0
    max_retries: int = 2

    @property
    def table(self) -> str:
        return f"[llm.{self.purpose}]"


def chat_server(llm: DefaultLLMSettings) -> str | None:
    """The [llm] backend's base URL when it speaks the OpenAI protocol, else None."""
    key = llm.api_key.get_secret_value().strip() if llm.api_key else ""
    if llm.provider not in ("auto", "openai"):
        return None
    if llm.base_url:
        return llm.base_url
    if key and not (llm.provider == "auto" and key.startswith("sk-ant-")):
        return OPENAI_DEFAULT_BASE_URL
    return None


def audio_server(llm: DefaultLLMSettings, purpose: Purpose) -> AudioServer | None:
    """The configured server for `purpose`, or None (off, or nothing to default to)."""
    table: TranscribeSettings | SpeechSettings = (
        llm.transcribe if purpose == "transcribe" else llm.speech
    )
    if not table.enabled:
        return None
    own_key = table.api_key.get_secret_value().strip() if table.api_key else ""
    url = table.base_url
    if url is None:
        url = chat_server(llm)
        if url is None:
            return None
        if not own_key and llm.api_key is not None:  # the same server: the same key
            own_key = llm.api_key.get_secret_value().strip()
    key = own_key or None
    return AudioServer(purpose, url, key, table.model, table.timeout_s, table.max_retries)


def transcription_form(data: bytes, filename: str, mime: str, model: str) -> aiohttp.FormData:
    """The multipart body of one transcription request."""
    import aiohttp

    form = aiohttp.FormData(quote_fields=False)
    form.add_field("file", data, filename=filename, content_type=mime)
    form.add_field("model", model)
    form.add_field("response_format", "json")
    return form


def parse_transcript(content_type: str, body: bytes) -> str:
    """The text of a transcription answer: `{"text": ...}` JSON, or plain text."""
    if "json" in content_type:
        try:
            obj = json.loads(body)
        except ValueError:
            raise AudioError("the transcription server sent an answer I cannot read") from None
        text = obj.get("text") if isinstance(obj, dict) else None
        if not isinstance(text, str):
            raise AudioError("the transcription server sent an answer without a transcript")
        return text.strip()
    return body.decode("utf-8", "replace").strip()


def _refusal(server: AudioServer, status: int) -> AudioError:
    what = "transcription" if server.purpose == "transcribe" else "speech"
    if status in (401, 403):
        return AudioError(
            f"the {what} server refused roost's API key (HTTP {status}): "
            f"check {server.table} api_key",
            "auth",
        )
    if status == 404:
        return AudioError(
            f"the {what} server does not know model {server.model!r} or has no "
            f"/audio endpoint (HTTP 404): check {server.table} base_url and model",
            "not_found",
        )
    if status == 413:
        return AudioError(f"the file is too large for the {what} server (HTTP 413)", "too_large")
    return AudioError(f"the {what} server could not handle the request (HTTP {status})")


Body = Callable[[], "aiohttp.FormData | dict[str, object]"]


class AudioClient:
    """One audio server; the session is made on first use and closed by `aclose`."""

    def __init__(
        self,
        server: AudioServer,
        *,
        session: aiohttp.ClientSession | None = None,
        sleep: Sleep = asyncio.sleep,
        backoff_s: float = 0.5,
    ) -> None:
        self.server = server
        self._session = session
        self._own = session is None
        self._sleep = sleep
        self._backoff = backoff_s

    async def transcribe(self, data: bytes, filename: str, mime: str) -> str:
        s = self.server
        ctype, body = await self._post(
            "/audio/transcriptions",
            lambda: transcription_form(data, filename, mime, s.model),
            MAX_TRANSCRIPT_BYTES,
        )
        return parse_transcript(ctype, body)

    async def speak(self, text: str, voice: str) -> bytes:
        s = self.server
        payload: dict[str, object] = {
            "model": s.model,
            "input": text,
            "voice": voice,
            "response_format": "opus",
        }
        _, audio = await self._post("/audio/speech", lambda: payload, MAX_SPEECH_BYTES)
        if not audio.startswith(b"OggS"):
            raise AudioError("the speech server did not send OGG/Opus audio", "bad_audio")
        return audio

    async def aclose(self) -> None:
        if self._own and self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession()
        return self._session

    async def _post(self, path: str, body: Body, limit: int) -> tuple[str, bytes]:
        s = self.server
        failures = 0
        while True:
            try:
                return await self._once(path, body(), limit)
            except _Retry as exc:
                failures += 1
                if failures > s.max_retries:
                    raise AudioError(
                        f"the {'transcription' if s.purpose == 'transcribe' else 'speech'} "
                        f"server is busy or unreachable ({exc.detail}); please try again later",
                        "unavailable",
                    ) from None
                delay = exc.wait if exc.wait is not None else self._backoff * 2 ** (failures - 1)
                log.warning(
                    "audio %s at %s: %s; retry %d in %.1fs",
                    s.purpose,
                    safe_host(s.base_url),
                    exc.detail,
                    failures,
                    min(delay, RETRY_AFTER_CAP_S),
                )
                await self._sleep(min(delay, RETRY_AFTER_CAP_S))

    async def _once(
        self, path: str, body: aiohttp.FormData | dict[str, object], limit: int
    ) -> tuple[str, bytes]:
        import aiohttp

        s = self.server
        headers = {"Authorization": f"Bearer {s.api_key}"} if s.api_key else {}
        as_json, form = (body, None) if isinstance(body, dict) else (None, body)
        timeout = aiohttp.ClientTimeout(total=s.timeout_s)
        try:
            async with self._client().post(
                s.base_url + path,
                headers=headers,
                timeout=timeout,
                json=as_json,
                data=form,
                allow_redirects=False,
            ) as resp:
                status = resp.status
                if 300 <= status < 400:
                    where = redirect_target(s.base_url + path, resp.headers.get("Location"))
                    log.warning(
                        "audio %s at %s: HTTP %d redirect to %s, not followed",
                        s.purpose,
                        safe_host(s.base_url),
                        status,
                        where,
                    )
                    what = "transcription" if s.purpose == "transcribe" else "speech"
                    raise AudioError(
                        f"the {what} server answered with a redirect (HTTP {status}), "
                        f"which roost does not follow: check {s.table} base_url"
                    )
                if status == 429 or status >= 500:
                    wait = retry_after_seconds(resp.headers.get("Retry-After"))
                    raise _Retry(f"HTTP {status}", wait)
                if status >= 400:
                    log.warning("audio %s at %s: HTTP %d", s.purpose, safe_host(s.base_url), status)
                    raise _refusal(s, status)
                data = await _read_capped(resp, limit)
                return resp.headers.get("Content-Type", ""), data
        except TimeoutError:
            raise _Retry(f"no answer within {s.timeout_s:g} s", None) from None
        except aiohttp.ClientError as exc:
            raise _Retry(connection_detail(exc), None) from None


class _Retry(Exception):
    def __init__(self, detail: str, wait: float | None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.wait = wait


async def _read_capped(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    if (resp.content_length or 0) > limit:
        raise AudioError("the audio server sent an answer that is too large", "too_large")
    out = bytearray()
    async for chunk in resp.content.iter_chunked(64 * 1024):
        out += chunk
        if len(out) > limit:
            raise AudioError("the audio server sent an answer that is too large", "too_large")
    return bytes(out)

"""The Graph API client of the WhatsApp channel: aiohttp, retries, errors as data.

Calls (Meta's Cloud API reference; `{base}` is `[whatsapp] api_base_url`,
the versioned Graph API, `Authorization: Bearer <access_token>` on each):
`POST {base}/{phone_number_id}/messages` (a message: answer `{"messaging_product",
"contacts": [{"input", "wa_id"}], "messages": [{"id"}]}`; also a read receipt
with the typing indicator: `{"status": "read", "message_id", "typing_indicator":
{"type": "text"}}` -> `{"success": true}`), `POST {base}/{phone_number_id}/media`
(multipart upload -> `{"id"}`), `GET {base}/{media-id}` (`{"url", "mime_type",
"sha256", "file_size", "id", "messaging_product"}`) and the download of that
URL. A failure is a `GraphError` built from Meta's error object `{"error":
{"message", "type", "code", "error_subcode", "fbtrace_id"}}`: its HTTP
status, `code`, `type` and `fbtrace_id` only (Meta's message may quote what
was sent: never kept). 429, 5xx, a dropped connection and the throttling
codes (4, 80007, 130429, 131056, and 1, 2, 131000, 131016: "try again") are
retried with backoff (`common.retry.Backoff`, honouring `Retry-After`); the
rest are final. A message whose request reached Meta but got no answer back
(the connection dropped or went silent after it was sent: `unconfirmed`) is
not sent again, since it may show: sending it twice could show it twice.
The token only ever goes to the API's host and the media hosts (`media.py`);
it is never logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from bridge.channels.common.retry import Backoff, retry_after_s

log = logging.getLogger("bridge.channels.whatsapp")

# aiohttp's errors raised after the request was written: the server may have acted on it
AFTER_SENDING = (
    aiohttp.ServerDisconnectedError,
    aiohttp.SocketTimeoutError,
    aiohttp.ClientPayloadError,
)
THROTTLED = frozenset({4, 80007, 130429, 131056})
TRANSIENT = frozenset({1, 2, 131000, 131016})
WINDOW_CLOSED = 131047  # more than 24 hours since the person's last message
UNDELIVERABLE = frozenset({131026, 131049, 131050, 131051})
Sleep = Callable[[float], Awaitable[None]]


class GraphError(Exception):
    """A Graph API call that failed: status, Meta's code and type, never its message."""

    def __init__(
        self,
        status: int,
        code: int = 0,
        kind: str = "",
        retry_after: float | None = None,
        trace: str = "",
        *,
        unconfirmed: bool = False,
    ) -> None:
        super().__init__(
            f"HTTP {status}"
            + (f", code {code}" if code else "")
            + (f" ({kind})" if kind else "")
            + (", sent but not confirmed" if unconfirmed else "")
        )
        self.status, self.code, self.kind = status, code, kind
        self.retry_after, self.trace = retry_after, trace
        self.unconfirmed = unconfirmed  # a message that may have arrived: never sent again

    @property
    def retryable(self) -> bool:
        if self.unconfirmed:
            return False
        return self.status in (0, 429) or self.status >= 500 or self.code in THROTTLED | TRANSIENT

    @property
    def throttled(self) -> bool:
        return self.status == 429 or self.code in THROTTLED

    @property
    def window_closed(self) -> bool:
        return self.code == WINDOW_CLOSED


@dataclass(frozen=True, slots=True)
class MediaInfo:
    url: str
    mime: str
    size: int  # file_size as Meta states it (0: not stated)
    sha256: str = ""


class GraphClient:
    """One business number's Graph API, over one aiohttp session (`start`/`aclose`)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        phone_number_id: str,
        backoff: Backoff | None = None,
        *,
        timeout_s: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.phone_number_id = phone_number_id
        self.backoff = backoff or Backoff()
        # no total: a large file may take long; silence for `timeout_s` fails the call
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_read=timeout_s)
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(self, message: Mapping[str, Any], backoff: Backoff | None = None) -> str:
        """Send one message (`to`, `type` and its object); its wamid."""
        body = {"messaging_product": "whatsapp", "recipient_type": "individual", **message}
        path = f"/{self.phone_number_id}/messages"
        answer = await self.call("POST", path, json=body, backoff=backoff, sends=True)
        try:
            return str(answer["messages"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise GraphError(200, kind="no message id") from None

    async def mark_read(self, wamid: str, typing: bool = True) -> bool:
        """The read receipt (blue ticks) and, with `typing`, the typing indicator
        (shown until the answer or for 25 s). Best effort: False when it failed."""
        body: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": wamid,
        }
        if typing:
            body["typing_indicator"] = {"type": "text"}
        try:
            await self.call(
                "POST", f"/{self.phone_number_id}/messages", json=body, backoff=self.backoff.once()
            )
        except GraphError as exc:
            log.debug("whatsapp: read receipt not sent: %s", exc)
            return False
        return True

    async def media(self, media_id: str) -> MediaInfo:
        """Where a received file can be fetched (the URL lives five minutes), its size."""
        answer = await self.call(
            "GET", f"/{media_id}", params={"phone_number_id": self.phone_number_id}
        )
        try:
            size = int(answer.get("file_size") or 0)
            return MediaInfo(
                str(answer["url"]),
                str(answer.get("mime_type", "")),
                size,
                str(answer.get("sha256", "")),
            )
        except (KeyError, TypeError, ValueError):
            raise GraphError(200, kind="no media url") from None

    async def upload(self, data: bytes, mime: str, filename: str) -> str:
        """Upload a file to send (a document, a voice note); its media id."""

        def form() -> aiohttp.FormData:
            fields = aiohttp.FormData()
            fields.add_field("messaging_product", "whatsapp")
            fields.add_field("type", mime)
            fields.add_field("file", data, filename=filename, content_type=mime)
            return fields

        answer = await self.call("POST", f"/{self.phone_number_id}/media", form=form)
        try:
            return str(answer["id"])
        except (KeyError, TypeError):
            raise GraphError(200, kind="no media id") from None

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str] | None = None,
        form: Callable[[], aiohttp.FormData] | None = None,
        backoff: Backoff | None = None,
        sends: bool = False,
    ) -> dict[str, Any]:
        """One API call with its retries; the JSON answer, or GraphError. `sends`: the call
        sends a message, so a failure after the request went out is `unconfirmed`."""
        policy = backoff or self.backoff
        retry = 0
        while True:
            try:
                return await self._once(method, path, json, params, form, sends)
            except GraphError as exc:
                retry += 1
                if not exc.retryable or retry >= policy.attempts:
                    raise
                await self._sleep(policy.delay(retry, exc.retry_after))

    async def _once(
        self,
        method: str,
        path: str,
        json: Any,
        params: Mapping[str, str] | None,
        form: Callable[[], aiohttp.FormData] | None,
        sends: bool = False,
    ) -> dict[str, Any]:
        data = form() if form is not None else None
        try:
            async with self.session.request(
                method, self.base_url + path, json=json, params=params, data=data, headers=self.auth
            ) as response:
                status = response.status
                asked = retry_after_s(response.headers.get("Retry-After"))
                try:
                    answer = await response.json(content_type=None)
                except (ValueError, aiohttp.ContentTypeError):
                    answer = None
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise GraphError(
                0, kind=type(exc).__name__, unconfirmed=sends and isinstance(exc, AFTER_SENDING)
            ) from None
        if 200 <= status < 300 and isinstance(answer, dict):
            return answer
        raise error_of(status, answer, asked)


def error_of(status: int, answer: object, retry_after: float | None = None) -> GraphError:
    """The GraphError for an answer that is not a success (Meta's error object)."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return GraphError(status, retry_after=retry_after)
    code = error.get("code")
    kind = error.get("type")
    trace = error.get("fbtrace_id")
    return GraphError(
        status,
        code if isinstance(code, int) else 0,
        kind if isinstance(kind, str) and kind.isidentifier() else "",
        retry_after,
        trace if isinstance(trace, str) and trace.isprintable() and len(trace) < 64 else "",
    )

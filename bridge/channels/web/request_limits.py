"""What the web listener takes of a request before any route runs: head size, body coding.

aiohttp's defaults let a tokenless client cost the daemon a lot: a request
head of up to 128 lines of 8 KB each (about 2 MiB of memory while it is
half-sent, since the parser keeps each header twice), and bodies sent with
`Content-Encoding: gzip`/`deflate`/`br` inflated as they arrive, on every
route, and for 10 s more after the answer (the "lingering" drain of a body
the route did not read). Here:

- `HANDLER_ARGS` for aiohttp's `RequestHandler`: no automatic inflation,
  the post-answer drain cut to `LINGER_S`, at most `MAX_HEADERS` header
  lines (each line still up to 8190 bytes: cookies, long URLs).
- `refused_encoding(...)`: a 415 (JSON `error`, `Accept-Encoding:
  identity`) for a request whose body is coded; the web channel's
  middleware asks it before any route reads a byte of the body, whichever
  channel added the route (the Telegram and WhatsApp webhooks too: neither
  platform documents a coded body, both post plain JSON). A coding named in
  `Transfer-Encoding` is not undone either: the route reads the raw bytes.
- `RoostRunner`, the `AppRunner` whose connections' handler (`_Handler`)
  refuses a head over `HEAD_MAX` bytes in all (431, the connection closed,
  without waiting for the rest: its memory is freed at once), and answers
  aiohttp's own errors with a fixed JSON body and `Server: roost`, never
  aiohttp's text quoting the request's bytes and naming its version: a head
  line over `LINE_MAX` or more than `MAX_HEADERS` lines is a 431 naming the
  limit (`refusal`), any other unparseable request a 400.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_protocol import RequestHandler, _ErrInfo

from bridge.channels.web.gate import error

HEAD_MAX = 32 * 1024  # a request head in all (nginx's default is 4 x 8 KB, Node's 16 KB)
MAX_HEADERS = 64  # header lines (a browser sends ~20, a CDN in front adds ~10)
SLICE = 8 * 1024  # bytes fed to the parser at a time (the head count's slack)
LINGER_S = 2.0  # the drain of a body the route did not read, so that its client reads the answer
LINE_MAX = 8190  # a request line or one header line (long cookies and URLs pass)
HANDLER_ARGS: dict[str, Any] = {
    "max_line_size": LINE_MAX,
    "max_field_size": LINE_MAX,
    "max_headers": MAX_HEADERS,
    "auto_decompress": False,
    "lingering_time": LINGER_S,
}
CODED = "this roost takes request bodies only uncompressed: send it again without Content-Encoding"
UNREADABLE = "roost could not read this request as HTTP"
HEAD_TOO_LARGE = f"the request head (its line and headers) is larger than {HEAD_MAX // 1024} KiB"
LINE_TOO_LONG = (
    f"a line of the request head (the URL, or one header) is longer than {LINE_MAX:,} bytes"
)
TOO_MANY_HEADERS = f"the request head has more than {MAX_HEADERS} header lines"
ERROR_HEADERS = {
    "Server": "roost",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def refused_encoding(content_encoding: str | None) -> web.Response | None:
    """415 when the body is coded (anything but no `Content-Encoding` or `identity`)."""
    if content_encoding is None or content_encoding.strip().lower() in ("", "identity"):
        return None
    refused = error(415, CODED)
    refused.headers["Accept-Encoding"] = "identity"
    return refused


class HeadTooLarge(HttpProcessingError):
    code = 431


def refusal(status: int, exc: BaseException | None, head: bool) -> tuple[int, str]:
    """The status and text of aiohttp's own answer, saying nothing of the request: a head
    over one of the limits (`head`: it was being read) is a 431 naming the limit."""
    if head and isinstance(exc, LineTooLong):
        return 431, LINE_TOO_LONG
    if head and isinstance(exc, BadHttpMessage) and "Too many headers" in exc.message:
        return 431, TOO_MANY_HEADERS
    if status == 400:
        return 400, UNREADABLE
    if status == 431:
        return 431, HEAD_TOO_LARGE
    try:  # 500, 504: aiohttp's own texts named no request either
        return status, HTTPStatus(status).phrase
    except ValueError:
        return status, "error"


def quiet_error(status: int, text: str) -> web.Response:
    """A JSON answer `{"error": text}` from roost, closing the connection."""
    body = json.dumps({"error": text}).encode()
    answer = web.Response(
        status=status, body=body, content_type="application/json", headers=ERROR_HEADERS
    )
    answer.force_close()
    return answer


class _Handler(RequestHandler):
    """aiohttp's handler of one connection, with a cap on a head's bytes in all and
    quiet answers of its own errors."""

    __slots__ = ("_body", "_head_bytes", "_refused")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._body: StreamReader | None = None  # the body of the last request whose head came
        self._refused = False

    def _reading_head(self) -> bool:
        return self._body is None or self._body.is_eof()

    def data_received(self, data: bytes) -> None:
        """Feed aiohttp's parser `SLICE` bytes at a time, counting a head's bytes: a head
        that passes `HEAD_MAX` is refused (431) and nothing more of the connection is
        read. Where a slice ends a head or a body, what of it follows is not known to
        the byte: the whole slice counts as the next head's (a head may so be refused
        up to `SLICE` bytes early, never let through longer)."""
        while data and not self._refused:
            reading = self._reading_head()
            step = data[: min(SLICE, HEAD_MAX + 1 - self._head_bytes) if reading else SLICE]
            if reading:
                self._head_bytes += len(step)
            data = data[len(step) :]
            count = self._request_count
            super().data_received(step)
            if self._request_count != count:  # a head came (or aiohttp's own error)
                self._body = self._messages[-1][1] if self._messages else None
                self._head_bytes = len(step) if self._reading_head() else 0
            elif not reading and self._reading_head():  # a body ended inside the slice
                self._head_bytes = len(step)
            if self._head_bytes > HEAD_MAX and self._reading_head():
                self._refuse_head()

    def _refuse_head(self) -> None:
        """Answer 431 once the requests before it are answered, then close (nothing
        more of the connection is parsed: the half-read head goes with it)."""
        self._refused = True
        exc = HeadTooLarge(message=HEAD_TOO_LARGE)
        self._messages.append((_ErrInfo(431, exc, HEAD_TOO_LARGE), EMPTY_PAYLOAD))
        self._request_count += 1
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs; raises if an answer began
        return quiet_error(*refusal(status, exc, self._reading_head()))


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class RoostRunner(web.AppRunner):
    """`web.AppRunner` whose connections get `_Handler` (the web listener's `GuardedSite`
    asks the runner's server for each connection's handler)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server
        return server

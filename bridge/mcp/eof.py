"""Every request read before stdin closed is answered before the stdio server stops.

A client may write its requests and close its end at once (`printf ... | roost
mcp`, a script, a test harness). The SDK's stdio server then ends its loop as
soon as the read stream reports the end, and cancels the handlers still
running: the last answers were lost (a `tools/list` sent with the handshake
went unanswered in 3 of 5 runs). `answered_first` wraps the two streams the
server is given: the read side counts each request it hands over, the write
side each answer (a result or an error of that id) the server sends, and the
end of the read stream is reported only once every request was answered or
cancelled by the client (`notifications/cancelled`, which the server does not
answer), or after `grace_s`, so a handler that never answers cannot keep the
process alive for good. Nothing else changes: messages pass through as they
are, in order, and the sender's context (`last_context`) is the inner stream's.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

EOF_GRACE_S = 120.0  # at most this long for the answers still owed once stdin closed


class Owed:
    """The ids of the requests read and not yet answered; `settled` is set when none is."""

    def __init__(self) -> None:
        self.ids: set[int | str] = set()
        self.settled = anyio.Event()
        self.settled.set()

    def read(self, item: object) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, types.JSONRPCRequest):
            self._add(message.id)
        elif (
            isinstance(message, types.JSONRPCNotification)
            and message.method == "notifications/cancelled"  # the server sends no answer
        ):
            params = message.params or {}
            self.answered(params.get("requestId") if isinstance(params, dict) else None)

    def sent(self, item: object) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.answered(message.id)

    def _add(self, ident: int | str) -> None:
        if not self.ids:
            self.settled = anyio.Event()
        self.ids.add(ident)

    def answered(self, ident: object) -> None:
        if isinstance(ident, int | str) and ident in self.ids:
            self.ids.discard(ident)
            if not self.ids:
                self.settled.set()


class _Wrapped:
    """A stream around `_inner`: closed with it, and an async context manager as it is."""

    _inner: Any

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class _Reading(_Wrapped):
    """The server's read stream: its end waits until every request read is answered."""

    def __init__(self, inner: Any, owed: Owed, grace_s: float) -> None:
        self._inner, self._owed, self._grace_s = inner, owed, grace_s

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            with anyio.move_on_after(self._grace_s):
                await self._owed.settled.wait()
            raise
        self._owed.read(item)
        return item

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class _Writing(_Wrapped):
    """The server's write stream: each answer is counted as it goes out."""

    def __init__(self, inner: Any, owed: Owed) -> None:
        self._inner, self._owed = inner, owed

    async def send(self, item: Any, /) -> None:
        await self._inner.send(item)
        self._owed.sent(item)


def answered_first(read: Any, write: Any, grace_s: float = EOF_GRACE_S) -> tuple[Any, Any]:
    """The stdio server's streams, wrapped so the read stream's end waits for the answers
    still owed (at most `grace_s`)."""
    owed = Owed()
    return _Reading(read, owed, grace_s), _Writing(write, owed)

"""An incremental Server-Sent Events decoder (the subset model servers use).

Feed it raw bytes as they arrive; it returns the `data` payload of every
complete event. Lines may be split anywhere across chunks (even inside a
multi-byte UTF-8 character); `\\n`, `\\r\\n` and `\\r` all end a line; comment
lines (`: keep-alive`) and the `event`, `id` and `retry` fields are ignored;
several `data:` lines of one event are joined with `\\n` as the spec says.

Bytes are capped: one line at `max_line_bytes` (8 MiB), the data of one
event (its `data:` lines together, until the blank line that ends it) at
`max_event_bytes` (16 MiB); past either, `SSEError`. After each `feed`,
`data_seen` says whether those bytes carried (part of) a `data:` line (the
model adapters' inactivity timers count only events that said something as
the server answering: bridge.llm.http_stream.IdleTimer).
"""

from __future__ import annotations

import re

_LINE_END = re.compile(rb"\r\n|\r|\n")
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_EVENT_BYTES = 16 * 1024 * 1024


class SSEError(ValueError):
    """The byte stream is not Server-Sent Events (or a line is too long)."""


class SSEDecoder:
    """Turn chunks of an SSE body into event data strings."""

    def __init__(
        self,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
        max_event_bytes: int = MAX_EVENT_BYTES,
    ) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._data_bytes = 0
        self._max_line = max_line_bytes
        self._max_event = max_event_bytes
        self.saw_field = False  # at least one well-formed SSE line was read
        self.data_seen = False  # the last `feed` carried bytes of a `data:` line

    def feed(self, chunk: bytes) -> list[str]:
        """Add bytes; return the data of each event completed by them."""
        self._buffer += chunk
        self.data_seen = False
        events: list[str] = []
        while True:
            match = _LINE_END.search(self._buffer)
            if match is None:
                break
            # A lone "\r" at the very end may be the first half of "\r\n".
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break
            line = self._buffer[: match.start()]
            self._buffer = self._buffer[match.end() :]
            event = self._line(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) > self._max_line:
            raise SSEError(f"an SSE line is longer than {self._max_line} bytes")
        partial = self._buffer[:5]
        if chunk and partial and (partial == b"data:"[: len(partial)]):
            self.data_seen = True  # a `data:` line still arriving
        return events

    def close(self) -> list[str]:
        """End of stream: flush a last event that lacked its blank line."""
        events: list[str] = []
        if self._buffer:
            line, self._buffer = self._buffer, b""
            event = self._line(line.rstrip(b"\r"))
            if event is not None:
                events.append(event)
        if self._data:
            events.append("\n".join(self._data))
            self._data = []
            self._data_bytes = 0
        return events

    def _line(self, raw: bytes) -> str | None:
        if not raw:
            if not self._data:
                return None
            event = "\n".join(self._data)
            self._data = []
            self._data_bytes = 0
            return event
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SSEError("an SSE line is not valid UTF-8") from exc
        if line.startswith(":"):
            self.saw_field = True
            return None
        name, sep, value = line.partition(":")
        if not sep or name not in ("data", "event", "id", "retry"):
            raise SSEError(f"not an SSE line: {line[:60]!r}")
        self.saw_field = True
        if name == "data":
            self.data_seen = True
            self._data_bytes += len(raw) + 1
            if self._data_bytes > self._max_event:
                raise SSEError(f"an SSE event is longer than {self._max_event} bytes")
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

"""What the web channel accepts before any work: the Host allow-list and JSON bodies.

Pure functions, no aiohttp. `HostAllowList` blocks DNS rebinding: a page on
`evil.example` whose name re-resolves to 127.0.0.1 still sends
`Host: evil.example:8787`, so only loopback names (`127.0.0.1`, `localhost`,
`[::1]`) with the port roost listens on, the bind address itself and the
operator's `[web] allowed_hosts` are served. `decode_json_object` turns a
request body into a dict or raises `BodyError` with a reason a person can act
on: never a RecursionError, a lone surrogate or a non-object; `ChatRequest`
is the shape a chat body must then have (`attachments`: upload ids).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")
MAX_DEPTH = 32
# `quote` of POST /api/chat: the text a message replies to. The core gives the
# model at most its first 1,000 characters; longer is refused as a client bug.
MAX_QUOTE = 16_000


def bracketed(host: str) -> str:
    """An IPv6 literal in URL form (`[::1]`); other names unchanged, lower case."""
    host = host.strip().lower()
    try:
        if ipaddress.ip_address(host).version == 6:
            return f"[{host}]"
    except ValueError:
        pass
    return host


def _split(entry: str) -> tuple[str, int | None]:
    """`name[:port]` -> (name, port or None); IPv6 literals keep their brackets."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        name, _, rest = entry.partition("]")
        name += "]"
        port = rest[1:] if rest.startswith(":") else None
    else:
        name, sep, port_text = entry.rpartition(":")
        if not sep:
            name, port = entry, None
        else:
            port = port_text
    if port is None:
        return name, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad port in {entry!r}")
    return name, int(port)


class HostAllowList:
    """The set of `Host` header values the web channel serves."""

    def __init__(self, bind_host: str, extra: Iterable[str] = ()) -> None:
        self._bind = bind_host
        self._extra = tuple(extra)
        self._allowed: frozenset[str] = frozenset()

    def listen_on(self, port: int) -> None:
        """Fix the set once the real port is known (port 0 picks one)."""
        names = list(LOOPBACK_NAMES)
        if self._bind not in WILDCARD_BINDS:
            names.append(bracketed(self._bind))
        allowed = {f"{name}:{port}" for name in names}
        if port == 80:
            allowed.update(names)
        for entry in self._extra:
            name, entry_port = _split(entry)
            if entry_port is None:
                allowed.update((name, f"{name}:{port}"))
            else:
                allowed.add(f"{name}:{entry_port}")
        self._allowed = frozenset(allowed)

    def allows(self, host_header: str | None) -> bool:
        return host_header is not None and host_header.strip().lower() in self._allowed


class BodyError(ValueError):
    """A request body that is not the JSON object we asked for; the text says why."""


def _too_deep(text: str, limit: int) -> bool:
    """True when arrays/objects nest deeper than `limit` (one linear pass; none at all
    when the text holds too few brackets to open that many)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _no_constants(name: str) -> Any:
    raise BodyError(f"{name} is not JSON")


# made once: `json.loads` with an option builds a decoder (and its scanner) on every call
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def decode_json_object(raw: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The body as a JSON object (UTF-8, strict JSON, shallow); BodyError otherwise."""
    if not raw.strip():
        raise BodyError("empty body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError("the body is not UTF-8") from None
    if _too_deep(text, max_depth):
        raise BodyError(f"JSON nested deeper than {max_depth} levels")
    try:
        value = _DECODER.decode(text)  # `json.loads` but for its BOM check: not JSON either
    except BodyError:
        raise
    except (ValueError, RecursionError):
        raise BodyError("not JSON") from None
    if not isinstance(value, dict):
        raise BodyError("the body must be a JSON object")
    # strict UTF-8 holds no surrogate: only a `\u` escape can have made one
    if "\\u" in text and _has_lone_surrogate(value):
        raise BodyError("the text holds an unpaired surrogate (not valid Unicode)")
    return value


class ChatRequest(BaseModel):
    """The body of `POST /api/chat` and `/api/chat/stream`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built at first request
    text: str
    chat: str = Field("default", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    quote: str = Field("", max_length=MAX_QUOTE)  # the text this message replies to
    # ids of this tenant's uploads (POST /api/upload, bridge.channels.web.upload)
    attachments: list[Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]] = Field(
        default_factory=list, max_length=10
    )

"""The child's side of `import net`, and the secret handle `secret()` returns.

A tool never holds a vault value. `secret("name")` gives a `Secret`: an opaque
handle whose `str()` and `repr()` are `[vault:name]`. `"Bearer " + handle` (or
`handle + "..."`) gives a composite handle that keeps the reference; anything
that turns a handle into text (an f-string, `str()`, `format`, `%`) gives the
plain text `[vault:name]`, which the broker does not fill in. Handles may stand
as (part of) a header value, a query value, a form value, a string anywhere in
a JSON body, or the whole text body of a `net` call: the child encodes each
such slot as parts (text / vault reference) and the broker substitutes the
value there only. A handle in the URL, or `[vault:...]` text in a header or
query value, is refused here with a hint.

`net.get` / `net.post` send one request document over the child's result pipe
and block on the reply from the go pipe (forge.protocol.net); the child has no
socket. The wall-clock deadline of the call covers the wait.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from forge.protocol.frames import FrameReader
from forge.protocol.net import (
    MAX_NET_ANSWER,
    BodyKind,
    NetAnswer,
    NetRequest,
    Part,
    Parts,
    decode_child_answer,
    encode_child_request,
)

_MARKER = re.compile(r"\[vault:[A-Za-z][A-Za-z0-9_]{0,63}\]")


class NetError(Exception):
    """A request the broker refused or could not complete (never carries a secret)."""


class Secret:
    """An opaque handle to vault values: text parts and references by name."""

    __slots__ = ("_parts",)

    def __init__(self, parts: Iterable[Part]) -> None:
        merged: list[Part] = []
        for kind, text in parts:
            if kind == "t" and merged and merged[-1][0] == "t":
                merged[-1] = ("t", merged[-1][1] + text)
            elif text or kind == "v":
                merged.append((kind, text))
        self._parts: Parts = tuple(merged)

    def __str__(self) -> str:
        return "".join(t if k == "t" else f"[vault:{t}]" for k, t in self._parts)

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __add__(self, other: object) -> Secret:
        if isinstance(other, Secret):
            return Secret(self._parts + other._parts)
        if isinstance(other, str):
            return Secret((*self._parts, ("t", other)))
        return NotImplemented

    def __radd__(self, other: object) -> Secret:
        if isinstance(other, str):
            return Secret((("t", other), *self._parts))
        return NotImplemented

    def parts(self) -> Parts:
        return self._parts


def handle(name: str) -> Secret:
    return Secret((("v", name),))


class Response:
    """What `net.get`/`net.post` return."""

    __slots__ = ("headers", "status", "text", "url")

    def __init__(self, answer: NetAnswer) -> None:
        self.status = answer.status
        self.headers = {k: v for k, v in answer.headers}
        self.text = answer.text
        self.url = answer.url

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 400

    def json(self) -> Any:
        return json.loads(self.text)

    def raise_for_status(self) -> None:
        if self.status >= 400:
            raise NetError(f"HTTP {self.status} from {self.url}")

    def __repr__(self) -> str:
        return f"<Response {self.status}>"


def _text_parts(value: object, slot: str) -> Parts:
    """A header or query value as parts; numbers become text."""
    if isinstance(value, Secret):
        return value.parts()
    if isinstance(value, bool):
        value = "true" if value else "false"
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        raise NetError(f"{slot} must be a string or a secret(), not {type(value).__name__}")
    if _MARKER.search(value):
        raise NetError(
            f"{slot} holds the text of a secret handle, which is never filled in: an f-string, "
            "str() or format() turned the handle into text. Build it with +, e.g. "
            '"Bearer " + secret("name")'
        )
    return (("t", value),)


def _items(mapping: object, slot: str) -> tuple[tuple[str, Parts], ...]:
    if mapping is None:
        return ()
    if not isinstance(mapping, dict):
        raise NetError(f"{slot} must be a dict")
    out: list[tuple[str, Parts]] = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise NetError(f"{slot} names must be strings")
        for one in value if isinstance(value, list | tuple) else [value]:
            out.append((key, _text_parts(one, f"{slot}[{key!r}]")))
    return tuple(out)


def _json_parts(body: object) -> Parts:
    """The JSON text of `body` with every handle as references (random placeholders
    that no other string of the body holds, then split)."""
    token = "v" + os.urandom(16).hex()
    found: list[Parts] = []

    def swap(obj: object) -> object:
        if isinstance(obj, Secret):
            found.append(obj.parts())
            return f"{token}{len(found) - 1}x"
        if isinstance(obj, dict):
            return {k: swap(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [swap(v) for v in obj]
        return obj

    text = json.dumps(swap(body), ensure_ascii=False, allow_nan=False)
    pieces = re.split(f"{token}([0-9]+)x", text)
    if len(pieces) != 2 * len(found) + 1:
        raise NetError("the JSON body could not be encoded")
    parts: list[Part] = []
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            parts.append(("t", piece))
        else:  # a handle inside a JSON string: its text parts are JSON-escaped
            for kind, t in found[int(piece)]:
                parts.append(
                    ("t", json.dumps(t, ensure_ascii=False)[1:-1]) if kind == "t" else ("v", t)
                )
    return Secret(parts).parts()


def build_request(
    method: str,
    url: object,
    *,
    params: object = None,
    headers: object = None,
    json_body: object = None,
    data: object = None,
    timeout: object = 10,
) -> NetRequest:
    """The wire request of one `net` call (raises NetError on a misuse)."""
    if isinstance(url, Secret):
        raise NetError("a secret may not stand in the URL: pass it in headers, params or the body")
    if not isinstance(url, str):
        raise NetError("the URL must be a string")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout <= 600:
        raise NetError("timeout must be a number of seconds between 0 and 600")
    kind: BodyKind = "none"
    body: Parts = ()
    form: tuple[tuple[str, Parts], ...] = ()
    if json_body is not None and data is not None:
        raise NetError("pass either json= or data=, not both")
    if json_body is not None:
        kind, body = "json", _json_parts(json_body)
    elif isinstance(data, dict):
        kind, form = "form", _items(data, "data")
    elif isinstance(data, str | Secret):
        kind, body = "text", (data.parts() if isinstance(data, Secret) else (("t", data),))
    elif data is not None:
        raise NetError("data must be a dict (a form) or a string")
    return NetRequest(
        method="GET" if method == "GET" else "POST",
        url=url,
        headers=_items(headers, "headers"),
        params=_items(params, "params"),
        body_kind=kind,
        body=body,
        form=form,
        timeout_s=float(timeout),
    )


class PipeChannel:
    """The child's end of the broker: requests out on `out_fd`, answers in on `in_fd`."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        self.out_fd = out_fd
        self.in_fd = in_fd
        self.frames = FrameReader(MAX_NET_ANSWER)

    def ask(self, req: NetRequest) -> NetAnswer:
        view = memoryview(encode_child_request(req))
        while view:
            view = view[os.write(self.out_fd, view) :]
        while True:
            chunk = os.read(self.in_fd, 1 << 16)
            if not chunk:
                raise NetError("the network broker is not available")
            done = self.frames.feed(chunk)
            if done:
                return decode_child_answer(done[0])


def make_net_module(ask: Callable[[NetRequest], NetAnswer] | None) -> SimpleNamespace:
    """The `net` proxy a tool imports; `ask` is the call's channel (None: no broker)."""

    def send(req: NetRequest) -> Response:
        if ask is None:
            raise NetError("the network is not available to this run")
        answer = ask(req)
        if not answer.ok:
            raise NetError(answer.error)
        return Response(answer)

    def get(url: str, *, params: Any = None, headers: Any = None, timeout: Any = 10) -> Response:
        return send(build_request("GET", url, params=params, headers=headers, timeout=timeout))

    def post(
        url: str,
        *,
        json: Any = None,
        data: Any = None,
        headers: Any = None,
        timeout: Any = 10,
    ) -> Response:
        req = build_request(
            "POST", url, headers=headers, json_body=json, data=data, timeout=timeout
        )
        return send(req)

    return SimpleNamespace(get=get, post=post, NetError=NetError, Response=Response)

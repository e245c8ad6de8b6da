"""The `net` wire: a tool's HTTP request travels child -> helper -> runner, the
broker's answer travels back the same way (pure: no I/O).

A request never carries a secret value: every slot a secret may fill (a header
value, a query value, a JSON or form body) is a list of `Part`s, each either
literal text (`("t", text)`) or a vault reference by name (`("v", name)`) that
only the broker replaces, escaped for its slot. The URL and the method are
plain strings: no secret may stand there.

Frames on the three pipes (forge.protocol.frames):
- child -> helper (its result pipe): `{"net": <request>}` (the final outcome
  frame has no "net" key);
- helper -> runner (helper stdout): `{"op": "net", "call": id, "seq": n, "request": ...}`;
- runner -> helper (helper stdin): `{"op": "net_answer", "call": id, "seq": n, "answer": ...}`;
- helper -> child (its go pipe, unused after the job): the answer document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from forge.protocol.fields import dump, field, load
from forge.protocol.frames import ProtocolError, frame

MAX_NET_REQUEST = 2 << 20  # bytes of one request document (headers, query, body)
MAX_NET_ANSWER = 8 << 20  # bytes of one answer document (a 1 MiB body, JSON-escaped)
MAX_SLOTS = 256  # headers or query items of one request

Part = tuple[Literal["t", "v"], str]
Parts = tuple[Part, ...]
Method = Literal["GET", "POST"]
BodyKind = Literal["none", "json", "form", "text"]


@dataclass(frozen=True, slots=True)
class NetRequest:
    method: Method
    url: str
    headers: tuple[tuple[str, Parts], ...] = ()
    params: tuple[tuple[str, Parts], ...] = ()
    body_kind: BodyKind = "none"
    body: Parts = ()  # json / text: the body text; form: unused
    form: tuple[tuple[str, Parts], ...] = ()
    timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class NetAnswer:
    ok: bool
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    text: str = ""
    url: str = ""
    error: str = ""


def _parts(value: object, what: str) -> Parts:
    if not isinstance(value, list) or len(value) > MAX_SLOTS * 16:
        raise ProtocolError(f"{what} must be a list of parts")
    out: list[Part] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], str)):
            raise ProtocolError(f"{what}: a part is [kind, text]")
        kind = item[0]
        if kind == "t":
            out.append(("t", item[1]))
        elif kind == "v":
            out.append(("v", item[1]))
        else:
            raise ProtocolError(f"{what}: unknown part kind {kind!r}")
    return tuple(out)


def _items(value: object, what: str) -> tuple[tuple[str, Parts], ...]:
    if not isinstance(value, list) or len(value) > MAX_SLOTS:
        raise ProtocolError(f"{what} must be a list of at most {MAX_SLOTS} items")
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise ProtocolError(f"{what}: an item is [name, parts]")
        out.append((item[0], _parts(item[1], what)))
    return tuple(out)


def request_doc(req: NetRequest) -> dict[str, Any]:
    return {
        "method": req.method,
        "url": req.url,
        "headers": [[k, [list(p) for p in v]] for k, v in req.headers],
        "params": [[k, [list(p) for p in v]] for k, v in req.params],
        "body_kind": req.body_kind,
        "body": [list(p) for p in req.body],
        "form": [[k, [list(p) for p in v]] for k, v in req.form],
        "timeout_s": req.timeout_s,
    }


def parse_request(data: dict[str, Any]) -> NetRequest:
    method = field(data, "method", str)
    if method not in ("GET", "POST"):
        raise ProtocolError(f"unknown method {method!r}")
    kind = field(data, "body_kind", str)
    if kind not in ("none", "json", "form", "text"):
        raise ProtocolError(f"unknown body kind {kind!r}")
    timeout = float(field(data, "timeout_s", int, float))
    if not 0 < timeout <= 3600:
        raise ProtocolError("timeout_s out of range")
    return NetRequest(
        method=method,
        url=field(data, "url", str),
        headers=_items(data.get("headers"), "headers"),
        params=_items(data.get("params"), "params"),
        body_kind=kind,
        body=_parts(data.get("body"), "body"),
        form=_items(data.get("form"), "form"),
        timeout_s=timeout,
    )


def answer_doc(ans: NetAnswer) -> dict[str, Any]:
    if not ans.ok:
        return {"ok": False, "error": ans.error}
    return {
        "ok": True,
        "status": ans.status,
        "headers": [list(h) for h in ans.headers],
        "text": ans.text,
        "url": ans.url,
    }


def parse_answer(data: dict[str, Any]) -> NetAnswer:
    if not field(data, "ok", bool):
        return NetAnswer(False, error=field(data, "error", str))
    headers = field(data, "headers", list)
    if not all(
        isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in headers
    ):
        raise ProtocolError("headers must be [name, value] pairs")
    return NetAnswer(
        True,
        status=field(data, "status", int),
        headers=tuple((h[0], h[1]) for h in headers),
        text=field(data, "text", str),
        url=field(data, "url", str),
    )


# child <-> helper


def encode_child_request(req: NetRequest) -> bytes:
    return frame(dump({"net": request_doc(req)}))


def encode_child_answer(doc: bytes) -> bytes:
    """The helper passes the runner's answer document on to the child unchanged."""
    return frame(doc)


def decode_child_answer(doc: bytes) -> NetAnswer:
    return parse_answer(load(doc))


# helper <-> runner


@dataclass(frozen=True, slots=True)
class NetAsk:
    call: int
    seq: int
    request: NetRequest


def encode_ask(call: int, seq: int, request_json: dict[str, Any]) -> bytes:
    return frame(dump({"op": "net", "call": call, "seq": seq, "request": request_json}))


def decode_ask(data: dict[str, Any]) -> NetAsk:
    request = parse_request(field(data, "request", dict))
    return NetAsk(field(data, "call", int), field(data, "seq", int), request)


def encode_answer(call: int, seq: int, answer: NetAnswer) -> bytes:
    doc = {"op": "net_answer", "call": call, "seq": seq, "answer": answer_doc(answer)}
    return frame(dump(doc))


def decode_answer(data: dict[str, Any]) -> tuple[int, int, bytes]:
    """(call, seq, the answer document for the child), checked."""
    answer = field(data, "answer", dict)
    parse_answer(answer)
    return field(data, "call", int), field(data, "seq", int), dump(answer)

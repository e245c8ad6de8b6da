"""The sandbox wire formats, without a fork: round trips, truncated and oversize
frames, unknown error kinds and malformed documents refused."""

from __future__ import annotations

import json
import marshal

import pytest

from forge.protocol.calls import (
    Hello,
    Reply,
    Request,
    decode_hello,
    decode_reply,
    decode_request,
    encode_hello,
    encode_reply,
    encode_request,
)
from forge.protocol.fields import ERROR_KINDS, ErrorKind, Failure
from forge.protocol.frames import HEADER, FrameReader, FrameTooLarge, ProtocolError, frame, unframe
from forge.protocol.jobs import (
    Outcome,
    decode_job,
    decode_outcome,
    encode_job,
    failure_doc,
    success_doc,
)
from forge.protocol.limits import Limits, decode_limits, encode_limits

REQ = Request(
    id=7,
    source="def run(a: int) -> int:\n    '''d'''\n    return a\n",
    params={"a": 1, "nested": {"ü": [1, 2.5, None]}},
    workspace="/tmp/ws",
    secret_names=("api_key",),
    timeout_s=2.5,
    max_output=4096,
    limits=Limits().for_timeout(2.5),
    trace=True,
)


def _doc(framed: bytes) -> bytes:
    doc = unframe(framed)
    assert doc is not None
    return doc


def test_request_round_trip_and_cpu_from_timeout() -> None:
    back = decode_request(_doc(encode_request(REQ)))
    assert back == REQ
    assert back.limits.cpu_s == 3


@pytest.mark.parametrize("kind", ERROR_KINDS)
def test_reply_round_trip_for_every_kind(kind: ErrorKind) -> None:
    reply = Reply(3, False, None, "", Failure(kind, "why"), 1.5, (("a", 1),))
    assert decode_reply(_doc(encode_reply(reply))) == reply
    ok = Reply(4, True, {"x": [1]}, "printed", None, 2.0)
    assert decode_reply(_doc(encode_reply(ok))) == ok


def test_unknown_error_kinds_are_refused() -> None:
    doc = {"id": 1, "ok": False, "printed": "", "duration_ms": 0, "error": {"kind": "x"}}
    doc["error"]["message"] = "m"
    with pytest.raises(ProtocolError, match="unknown error kind"):
        decode_reply(json.dumps(doc).encode())
    with pytest.raises(ProtocolError):
        decode_outcome(b'{"ok": false, "kind": "escaped", "message": ""}')


def test_outcomes() -> None:
    ok = decode_outcome(json.dumps(success_doc([1], "hi")).encode())
    assert ok == Outcome(True, [1], "hi")
    bad = decode_outcome(json.dumps(failure_doc("denied", "no")).encode())
    assert bad.error == Failure("denied", "no") and not bad.ok


@pytest.mark.parametrize(
    "doc",
    [b"", b"[]", b"{", b'{"ok": 1}', b'{"ok": true, "printed": 3}', b'{"ok": "yes"}'],
)
def test_malformed_outcomes_are_refused(doc: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_outcome(doc)


def test_malformed_requests_are_refused() -> None:
    good = json.loads(_doc(encode_request(REQ)))
    for key, value in [
        ("id", "7"),
        ("id", True),
        ("secret_names", [1]),
        ("limits", [1, 2, 3]),
        ("limits", [1, 2, 3, -4]),
        ("limits", [1, 2, 3, True]),
        ("params", [1]),
        ("trace", 1),
    ]:
        with pytest.raises(ProtocolError):
            decode_request(json.dumps({**good, key: value}).encode())


def test_limits_codec() -> None:
    limits = Limits(1, 2, 3, 4)
    assert decode_limits(encode_limits(limits)) == limits
    assert decode_limits(tuple(encode_limits(limits))) == limits


def test_hello_round_trip() -> None:
    hello = Hello(10, 11, {"seccomp": {"available": True, "detail": ""}})
    assert decode_hello(_doc(encode_hello(hello))) == hello
    with pytest.raises(ProtocolError):
        decode_hello(_doc(encode_reply(Reply(1, True))))


def test_job_round_trip() -> None:
    code = marshal.dumps(compile("x = 1", "<tool>", "exec"))
    job = decode_job(encode_job(code, REQ, "/real/ws"))
    assert (job.params, job.workspace, job.secret_names) == (
        REQ.params,
        "/real/ws",
        REQ.secret_names,
    )
    assert (job.limits, job.max_output, job.trace) == (REQ.limits, 4096, True)
    with pytest.raises(ProtocolError):
        decode_job(marshal.dumps((1, code, {}, "/", {}, [1, 2, 3, 4], 1, False)))
    with pytest.raises(ProtocolError):
        decode_job(b"not marshal")


def test_frames_split_anywhere_come_out_whole() -> None:
    frames = [encode_request(REQ), encode_reply(Reply(1, True, "é" * 100))]
    stream = b"".join(frames)
    for cut in range(len(stream) + 1):
        reader = FrameReader(1 << 20)
        got = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert got == [_doc(f) for f in frames]
        assert reader.buffered() == 0


def test_truncated_frames_wait() -> None:
    framed = frame(b"abc")
    for cut in range(len(framed)):
        assert unframe(framed[:cut]) is None
        reader = FrameReader(16)
        assert reader.feed(framed[:cut]) == []
        assert reader.buffered() == cut
    assert unframe(framed + b"junk") == b"abc"


def test_oversize_frames_are_refused_from_the_header() -> None:
    reader = FrameReader(8)
    assert reader.feed(frame(b"12345678")) == [b"12345678"]
    with pytest.raises(FrameTooLarge):
        reader.feed(HEADER.pack(9))  # refused before any of its body arrives
    with pytest.raises(FrameTooLarge):
        FrameReader(1 << 20).feed(HEADER.pack(2**63))

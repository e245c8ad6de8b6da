"""The sandbox wire formats, without a fork: round trips, truncated and oversize
frames, unknown error kinds and malformed documents refused."""

from __future__ import annotations

import json
import marshal

import pytest

from forge import protocol as p

REQ = p.Request(
    id=7,
    source="def run(a: int) -> int:\n    '''d'''\n    return a\n",
    params={"a": 1, "nested": {"ü": [1, 2.5, None]}},
    workspace="/tmp/ws",
    secrets={"api_key": "v"},
    timeout_s=2.5,
    max_output=4096,
    limits=p.Limits().for_timeout(2.5),
    trace=True,
)


def _doc(framed: bytes) -> bytes:
    doc = p.unframe(framed)
    assert doc is not None
    return doc


def test_request_round_trip_and_cpu_from_timeout() -> None:
    back = p.decode_request(_doc(p.encode_request(REQ)))
    assert back == REQ
    assert back.limits.cpu_s == 3


@pytest.mark.parametrize("kind", p.ERROR_KINDS)
def test_reply_round_trip_for_every_kind(kind: p.ErrorKind) -> None:
    reply = p.Reply(3, False, None, "", p.Failure(kind, "why"), 1.5, (("a", 1),))
    assert p.decode_reply(_doc(p.encode_reply(reply))) == reply
    ok = p.Reply(4, True, {"x": [1]}, "printed", None, 2.0)
    assert p.decode_reply(_doc(p.encode_reply(ok))) == ok


def test_unknown_error_kinds_are_refused() -> None:
    doc = {"id": 1, "ok": False, "printed": "", "duration_ms": 0, "error": {"kind": "x"}}
    doc["error"]["message"] = "m"
    with pytest.raises(p.ProtocolError, match="unknown error kind"):
        p.decode_reply(json.dumps(doc).encode())
    with pytest.raises(p.ProtocolError):
        p.decode_outcome(b'{"ok": false, "kind": "escaped", "message": ""}')


def test_outcomes() -> None:
    ok = p.decode_outcome(json.dumps(p.success_doc([1], "hi")).encode())
    assert ok == p.Outcome(True, [1], "hi")
    bad = p.decode_outcome(json.dumps(p.failure_doc("denied", "no")).encode())
    assert bad.error == p.Failure("denied", "no") and not bad.ok


@pytest.mark.parametrize(
    "doc",
    [b"", b"[]", b"{", b'{"ok": 1}', b'{"ok": true, "printed": 3}', b'{"ok": "yes"}'],
)
def test_malformed_outcomes_are_refused(doc: bytes) -> None:
    with pytest.raises(p.ProtocolError):
        p.decode_outcome(doc)


def test_malformed_requests_are_refused() -> None:
    good = json.loads(_doc(p.encode_request(REQ)))
    for key, value in [
        ("id", "7"),
        ("id", True),
        ("secrets", {"k": 1}),
        ("limits", [1, 2, 3]),
        ("limits", [1, 2, 3, -4]),
        ("limits", [1, 2, 3, True]),
        ("params", [1]),
        ("trace", 1),
    ]:
        with pytest.raises(p.ProtocolError):
            p.decode_request(json.dumps({**good, key: value}).encode())


def test_limits_codec() -> None:
    limits = p.Limits(1, 2, 3, 4)
    assert p.decode_limits(p.encode_limits(limits)) == limits
    assert p.decode_limits(tuple(p.encode_limits(limits))) == limits


def test_hello_round_trip() -> None:
    hello = p.Hello(10, 11, {"seccomp": {"available": True, "detail": ""}})
    assert p.decode_hello(_doc(p.encode_hello(hello))) == hello
    with pytest.raises(p.ProtocolError):
        p.decode_hello(_doc(p.encode_reply(p.Reply(1, True))))


def test_job_round_trip() -> None:
    code = marshal.dumps(compile("x = 1", "<tool>", "exec"))
    job = p.decode_job(p.encode_job(code, REQ, "/real/ws"))
    assert (job.params, job.workspace, job.secrets) == (REQ.params, "/real/ws", REQ.secrets)
    assert (job.limits, job.max_output, job.trace) == (REQ.limits, 4096, True)
    with pytest.raises(p.ProtocolError):
        p.decode_job(marshal.dumps((1, code, {}, "/", {}, [1, 2, 3, 4], 1, False)))
    with pytest.raises(p.ProtocolError):
        p.decode_job(b"not marshal")


def test_frames_split_anywhere_come_out_whole() -> None:
    frames = [p.encode_request(REQ), p.encode_reply(p.Reply(1, True, "é" * 100))]
    stream = b"".join(frames)
    for cut in range(len(stream) + 1):
        reader = p.FrameReader(1 << 20)
        got = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert got == [_doc(f) for f in frames]
        assert reader.buffered() == 0


def test_truncated_frames_wait() -> None:
    framed = p.frame(b"abc")
    for cut in range(len(framed)):
        assert p.unframe(framed[:cut]) is None
        reader = p.FrameReader(16)
        assert reader.feed(framed[:cut]) == []
        assert reader.buffered() == cut
    assert p.unframe(framed + b"junk") == b"abc"


def test_oversize_frames_are_refused_from_the_header() -> None:
    reader = p.FrameReader(8)
    assert reader.feed(p.frame(b"12345678")) == [b"12345678"]
    with pytest.raises(p.FrameTooLarge):
        reader.feed(p.HEADER.pack(9))  # refused before any of its body arrives
    with pytest.raises(p.FrameTooLarge):
        p.FrameReader(1 << 20).feed(p.HEADER.pack(2**63))

"""The helper's relay of a child's `net` requests (pure of the helper's loop).

A child writes `{"net": request}` frames on its result pipe before its outcome
frame. The helper checks each request (forge.protocol.net), forwards it to the
runner tagged with the call's id and a sequence number, and writes the
runner's answer into the child's go pipe without blocking (an answer may be
larger than a pipe's buffer; what does not fit waits in the call's outbox until
the pipe is writable). A malformed request is answered with an error at once.
"""

from __future__ import annotations

import json
import os
from typing import Any

from forge.protocol.fields import dump
from forge.protocol.frames import ProtocolError, frame
from forge.protocol.net import NetAnswer, answer_doc, parse_request, request_doc
from forge.replies import InFlight

NET_PREFIX = b'{"net": '  # how forge.protocol.net.encode_child_request starts a frame


def net_request(doc: bytes) -> dict[str, Any] | ProtocolError | None:
    """The checked request document of a child's `net` frame, None for an outcome
    frame, a ProtocolError for a malformed request."""
    if not doc.startswith(NET_PREFIX):
        return None
    try:
        data = json.loads(doc)
        return request_doc(parse_request(data["net"]))
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        return ProtocolError(f"a malformed net request: {type(exc).__name__}")


def refuse(p: InFlight, message: str) -> None:
    queue(p, dump(answer_doc(NetAnswer(False, error=message))))


def queue(p: InFlight, answer: bytes) -> None:
    p.outbox += frame(answer)


def flush(p: InFlight) -> bool:
    """Write what the outbox holds; True when something is still left (wait for the
    pipe to be writable). A child that is gone drops its answers."""
    while p.outbox:
        try:
            n = os.write(p.go, p.outbox)
        except BlockingIOError:
            return True
        except OSError:
            p.outbox.clear()
            return False
        del p.outbox[:n]
    return False

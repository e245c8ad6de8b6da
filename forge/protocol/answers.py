"""The child -> runner wire: a call's outcome sent straight to the runner, one hop fewer.

The runner makes one SOCK_SEQPACKET socket pair per helper and hands one end to
it; the helper's zygote and every child it forks inherit that end (the helper
closes its own copy). A child whose outcome document fits in `DIRECT_MAX` bytes
writes it there as one message (one `write`, one record: records of several
children never interleave), then the one-frame marker `DIRECT_DONE` on its
result pipe, so the helper knows the call was answered and sends no reply of
its own. A larger outcome, or a failed write, goes the old way: a frame on the
result pipe, which the helper relays.

A message is `id` (8 bytes, little-endian), the call's `token` (16 random bytes
the runner chose for that call and only that call's child received, in its
job), then the outcome document exactly as the helper would have read it
(forge.protocol.jobs). Every child of a helper shares the socket, and a child
that broke out of every layer could write on it; without the token of a call it
cannot answer for that call (`decode_direct` gives what the runner checks). The
runner's end is shut for writing: nothing ever flows to a child on it.
"""

from __future__ import annotations

import struct

from forge.protocol.frames import ProtocolError, frame

TOKEN_SIZE = 16
HEADER = struct.Struct(f"<Q{TOKEN_SIZE}s")
DIRECT_MAX = 64 << 10  # bytes of an outcome document sent straight to the runner
MESSAGE_MAX = HEADER.size + DIRECT_MAX
DIRECT_DONE_DOC = b"D"  # never a JSON object: no outcome or `net` frame looks like it
DIRECT_DONE = frame(DIRECT_DONE_DOC)


def encode_direct(call_id: int, token: bytes, doc: bytes) -> bytes:
    """The message a child writes for call `call_id`: header, then the outcome `doc`."""
    return HEADER.pack(call_id, token) + doc


def decode_direct(message: bytes | memoryview) -> tuple[int, bytes, bytes]:
    """(call id, token, outcome document) of one message; ProtocolError when it is
    shorter than a header or longer than `MESSAGE_MAX`."""
    if len(message) < HEADER.size:
        raise ProtocolError("a direct answer shorter than its header")
    if len(message) > MESSAGE_MAX:
        raise ProtocolError(f"a direct answer of more than {MESSAGE_MAX} bytes")
    call_id, token = HEADER.unpack_from(message)
    return call_id, token, bytes(message[HEADER.size :])

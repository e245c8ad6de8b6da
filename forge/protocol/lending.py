"""The helper -> runner lending wire: waiting children lent to the runner, and codes.

One more SOCK_SEQPACKET pair per helper, which only the runner and that helper
hold (the zygote closes it before its first fork, so no child ever has it). On
it the helper lends the runner each waiting child bound to its workspace
(forge.zygote `bind`): a `lend` message names the child's pid and the workspace
it is confined to (the helper's binding: generation, device, inode, resolved
path) and carries two descriptors (SCM_RIGHTS): the write end of its go pipe
and its job memfd. The runner then writes a call's job into that child itself
and tells the helper afterwards (`handed_frame` on the helper's stdin), one hop
fewer on the call's path (forge.runner). The helper keeps its own copies (it
watches the child, relays its `net` requests and may be given it back for a
call that goes through it).

A `gone` message names a lent child the zygote reported dead while it was
lent: the runner, if it still holds it unused, closes its copies and names it
back as dropped at once (`dropped_frame`), so children killed while they wait
(the OOM killer, a stray signal) leave no descriptors behind on either side;
the runner also holds at most `LENT_MAX` lent children of a helper, and closes
any descriptor a message other than `lend` carries.

A `code` message carries a tool's marshalled code (compiled by the helper,
forge.code_cache) under the sha256 of its source: the runner writes only code
its helper compiled, into that helper's children.

Nothing flows to the helper on this socket: the runner's end is shut for
writing, and the runner's messages to the helper stay frames on its stdin.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from forge.protocol.fields import dump
from forge.protocol.frames import ProtocolError, frame

LEND = struct.Struct("<ciiQQ")  # b"L", pid, generation, dev, ino; then the path
CODE = struct.Struct("<c32s")  # b"C", sha256 of the source; then the marshalled code
LEND_MAX = 8192 + LEND.size  # a lend message (a path is at most 4096 bytes)
MESSAGE_MAX = 256 << 10  # any message (a tool whose code is larger never reaches the
# runner: its calls go through the helper)
GONE = struct.Struct("<ci")  # b"G", pid
LEND_FDS = 2  # go pipe's write end, job memfd
LENT_MAX = 8  # lent children the runner holds of one helper (its depth is at most 8)
HANDED_OP = "handed"
DROP_OP = "drop"


@dataclass(frozen=True, slots=True)
class Lent:
    """A waiting child as the runner holds it."""

    pid: int
    generation: int
    dev: int
    ino: int
    path: str  # the workspace it is confined to, resolved by the helper
    go: int
    job: int

    def binding(self) -> tuple[str, int, int]:
        return (self.path, self.dev, self.ino)


def encode_lend(pid: int, generation: int, dev: int, ino: int, path: str) -> bytes:
    return LEND.pack(b"L", pid, generation, dev, ino) + path.encode("utf-8", "surrogateescape")


def encode_code(digest: bytes, code: bytes) -> bytes:
    return CODE.pack(b"C", digest) + code


def decode_lend(message: bytes, fds: list[int]) -> Lent:
    """The child a `lend` message names; ProtocolError when it is not one (its
    descriptors stay the caller's to close)."""
    if len(message) < LEND.size or message[:1] != b"L" or len(fds) != LEND_FDS:
        raise ProtocolError("not a lend message")
    _, pid, generation, dev, ino = LEND.unpack_from(message)
    if pid <= 0 or generation <= 0:
        raise ProtocolError("a lend message without a pid or a binding")
    path = message[LEND.size :].decode("utf-8", "surrogateescape")
    return Lent(pid, generation, dev, ino, path, fds[0], fds[1])


def encode_gone(pid: int) -> bytes:
    return GONE.pack(b"G", pid)


def decode_gone(message: bytes) -> int:
    """The pid a `gone` message names (ProtocolError when it is not one)."""
    if len(message) != GONE.size or message[:1] != b"G":
        raise ProtocolError("not a gone message")
    return int(GONE.unpack(message)[1])


def dropped_frame(drop: tuple[int, ...]) -> bytes:
    """The runner names lent children back as dropped without a call (they died while
    lent, or it holds too many): the helper kills them and forgets them."""
    return frame(dump({"op": DROP_OP, "drop": list(drop)}))


def decode_code(message: bytes) -> tuple[bytes, bytes]:
    """(sha256 of the source, marshalled code) of a `code` message."""
    if len(message) <= CODE.size or message[:1] != b"C":
        raise ProtocolError("not a code message")
    _, digest = CODE.unpack_from(message)
    return digest, message[CODE.size :]


def handed_frame(
    call_id: int,
    child: int,
    key: str,
    at: float,
    timeout_s: float,
    max_output: int,
    trace: bool,
    drop: tuple[int, ...] = (),
    busy: bool = False,
) -> bytes:
    """What the runner tells the helper once it wrote call `call_id`'s job into lent
    child `child` (at monotonic time `at`): the helper watches it from now on, as a
    child it handed the call to itself (deadline `at` + `timeout_s`, output cap
    `max_output`); `key`: the source's sha256 (hex) for the reading hint; `drop`:
    lent children the runner will never use (their binding is no longer the
    workspace's, or they died while waiting): the helper kills them; `busy`: another
    call of this helper was in flight when this one started (forge.child_pool
    `ChildPool.overlap`)."""
    doc = {
        "op": HANDED_OP,
        "id": call_id,
        "child": child,
        "key": key,
        "at": at,
        "timeout_s": timeout_s,
        "max_output": max_output,
        "trace": trace,
        "drop": list(drop),
        "busy": busy,
    }
    return frame(dump(doc))

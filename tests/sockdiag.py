"""The kernel's TCP socket table, asked through sock_diag (`man 7 sock_diag`), for tests
that watch what a server holds.

Reading /proc/net/tcp walks every bucket of the table and formats every TCP socket of
the machine as text (about 5 ms of the kernel's CPU a read on a machine holding many
sockets), then the test parses it; a test that polls it spends seconds there. The
dump gives the same rows as binary records for about half the kernel's CPU, and one
connection asked by its four addresses is a hash lookup. The rows are those of
/proc/net/tcp (or tcp6): (local port, remote port, state in hex, inode as text).
"""

from __future__ import annotations

import errno
import os
import socket
import struct

_SOCK_DIAG, _BY_FAMILY = 4, 20  # NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY
_REQUEST, _DUMP = 0x1, 0x301  # NLM_F_REQUEST; with NLM_F_DUMP
_NLMSG_ERROR, _NLMSG_DONE, _LISTEN = 2, 3, 10
_EVERY_STATE = 0xFFFFFFFF
_NO_COOKIE = struct.pack("=II", 0xFFFFFFFF, 0xFFFFFFFF)
_HEAD = struct.Struct("=IHHII")  # nlmsghdr
_PORTS = struct.Struct(">HH")  # inet_diag_sockid's source and destination ports
_INODE_AT = _HEAD.size + 4 + 48 + 16  # inet_diag_msg: 4 bytes, sockid, 4 u32, the inode

Row = tuple[int, int, str, str]


def diag_socket() -> socket.socket:
    return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _SOCK_DIAG)


def _request(family: int, sockid: bytes, flags: int) -> bytes:
    body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, _EVERY_STATE) + sockid
    return _HEAD.pack(_HEAD.size + len(body), _BY_FAMILY, flags, 1, 0) + body


def tcp_rows(family: int = socket.AF_INET) -> list[Row]:
    """Every TCP socket of `family` in this network namespace, in every state, as the
    rows of /proc/net/tcp (AF_INET) or /proc/net/tcp6 (AF_INET6)."""
    rows: list[Row] = []
    with diag_socket() as diag:
        diag.send(_request(family, bytes(48), _DUMP))  # any addresses
        while True:
            answer, at = diag.recv(1 << 20), 0
            while at < len(answer):
                length, kind, _, _, _ = _HEAD.unpack_from(answer, at)
                if kind == _NLMSG_DONE:
                    return rows
                assert kind != _NLMSG_ERROR, "sock_diag refused the dump (no tcp_diag here?)"
                state = answer[at + _HEAD.size + 1]
                local, remote = _PORTS.unpack_from(answer, at + _HEAD.size + 4)
                (inode,) = struct.unpack_from("=I", answer, at + _INODE_AT)
                rows.append((local, remote, f"{state:02X}", str(inode)))
                at += (length + 3) & ~3


def server_inode(diag: socket.socket, port: int, client: tuple[str, int]) -> str | None:
    """The inode (as /proc/net/tcp writes it) of the server's end of the IPv4 connection
    from `client` to 127.0.0.1:`port`, None when there is no such connection. An end
    still in the listen queue, or closed and waiting (TIME_WAIT), has inode "0": no
    process holds it."""
    source, remote = client
    sockid = (
        _PORTS.pack(port, remote)
        + socket.inet_aton("127.0.0.1").ljust(16, b"\0")
        + socket.inet_aton(source).ljust(16, b"\0")
        + struct.pack("=I", 0)  # any interface
        + _NO_COOKIE
    )
    diag.send(_request(socket.AF_INET, sockid, _REQUEST))
    answer = diag.recv(65536)
    _, kind, _, _, _ = _HEAD.unpack_from(answer)
    if kind == _NLMSG_ERROR:
        (error,) = struct.unpack_from("=i", answer, _HEAD.size)
        assert error == -errno.ENOENT, os.strerror(-error)
        return None
    if answer[_HEAD.size + 1] == _LISTEN:  # no such connection: the lookup found the listener
        return None
    return str(struct.unpack_from("=I", answer, _INODE_AT)[0])

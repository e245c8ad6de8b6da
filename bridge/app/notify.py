"""The systemd notify protocol, spoken directly (no dependency): READY, STATUS, WATCHDOG.

systemd hands a `Type=notify` service the address of a datagram socket in
`$NOTIFY_SOCKET`: a filesystem path, or an abstract name written `@name`.
Each message is one datagram of newline-separated `KEY=value` lines
(`READY=1`, `STATUS=...`, `WATCHDOG=1`, `STOPPING=1`). `$WATCHDOG_USEC`
(with `$WATCHDOG_PID`, when set, naming this process) asks for a
`WATCHDOG=1` at least that often; roost pings at half the interval. Without
`$NOTIFY_SOCKET` every call is a no-op, so `roost serve` in a terminal is
unchanged. A failed send is logged once and never stops the daemon.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, MutableMapping

log = logging.getLogger("roost")


def socket_address(value: str) -> str | bytes | None:
    """The address to send to: a path, or an abstract name (`@x` -> b"\\0x"); None if unusable."""
    if value.startswith("@") and len(value) > 1:
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # systemd also knows vsock: addresses; roost does not need them


def watchdog_interval(env: Mapping[str, str], pid: int) -> float | None:
    """Seconds between WATCHDOG=1 pings (half of `$WATCHDOG_USEC`), or None when not asked."""
    usec = env.get("WATCHDOG_USEC", "")
    owner = env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if owner and owner != str(pid):
        return None  # meant for another process (a parent that started us)
    return int(usec) / 2 / 1_000_000


class Notifier:
    """Sends notify messages to one address (or nowhere)."""

    def __init__(self, address: str | bytes | None) -> None:
        self.address = address
        self._failed = False

    @classmethod
    def from_env(cls, env: MutableMapping[str, str]) -> Notifier:
        """The notifier `$NOTIFY_SOCKET` names; the variable is removed (children never see it)."""
        value = env.pop("NOTIFY_SOCKET", "")
        return cls(socket_address(value) if value else None)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        """Send `KEY=value` lines as one datagram; True when it was sent."""
        if self.address is None:
            return False
        payload = "\n".join(line.replace("\n", " ") for line in lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(payload, self.address)
        except OSError as exc:
            if not self._failed:
                log.warning("cannot notify systemd at $NOTIFY_SOCKET: %s", exc.strerror or exc)
            self._failed = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self, status: str) -> bool:
        return self.send("STOPPING=1", f"STATUS={status}")

"""The daemon's file descriptors: how many the web server may hold, and what is kept back.

At start `serve()` raises the soft `RLIMIT_NOFILE` to the hard one (at most
`SOFT_CAP`; systemd's `LimitNOFILE=` sets both) and the web channel's row
asks `web_limits` for its connection limits, computed from the limit and the
descriptors already open then (`budget`, pure). A reserve of a quarter of
the limit (at least `RESERVE_MIN`) always stays for Telegram, SQLite, the
audit chain, the sandbox and MCP servers: a web connection whose descriptor
number reaches `limit - reserve` is refused (`ConnLimits.fd_ceiling`), and the
web gets at most half of what is left above the start-up count (a connection
may hold a second descriptor: a file it uploads or downloads). Operators may
set `[web] max_connections` lower or higher; the reserve holds either way.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from bridge.channels.web.conns import ConnLimits
from bridge.core.config_sections import WebSettings

RESERVE_MIN = 24
MIN_WEB = 4  # even on a tiny limit: /healthz and one page
SOFT_CAP = 65536


@dataclass(frozen=True, slots=True)
class Budget:
    limit: int  # RLIMIT_NOFILE (soft) in force
    in_use: int  # descriptors open when it was measured
    reserve: int  # kept for everything but the web
    limits: ConnLimits

    def describe(self) -> str:
        return (
            f"descriptor limit {self.limit} ({self.in_use} open at start): up to "
            f"{self.limits.max_total} web connections, {self.limits.per_client} per client; "
            f"{self.reserve} kept for Telegram, SQLite, the audit chain and the sandbox"
        )


def budget(limit: int, in_use: int, web: WebSettings) -> Budget:
    """The web's share of `limit` descriptors when `in_use` are open already."""
    reserve = max(RESERVE_MIN, limit // 4)
    share = max(MIN_WEB, (limit - in_use - reserve) // 2)
    total = web.max_connections or share
    limits = ConnLimits(
        max_total=total,
        per_client=min(web.max_connections_per_client, total),
        fd_ceiling=max(in_use + MIN_WEB, limit - reserve),
        header_timeout_s=web.header_timeout_s,
        body_timeout_s=web.body_timeout_s,
        body_idle_s=web.body_idle_s,
        streams_per_token=web.streams_per_token,
        streams_per_tenant=web.streams_per_tenant,
    )
    return Budget(limit, in_use, reserve, limits)


def open_descriptors() -> int:
    """How many descriptors this process has open now (Linux: /proc/self/fd)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return max(0, len(os.listdir(folder)) - 1)  # less the one listdir used
        except OSError:
            continue
    return RESERVE_MIN  # unknown: assume a small daemon


def raise_soft_limit(cap: int = SOFT_CAP) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one (at most `cap`); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard if hard != resource.RLIM_INFINITY else cap, cap)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            return want
        except (OSError, ValueError):
            return soft
    return soft


def web_limits(web: WebSettings) -> Budget:
    """The budget for this process, measured now."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = soft if soft != resource.RLIM_INFINITY else SOFT_CAP
    return budget(limit, open_descriptors(), web)

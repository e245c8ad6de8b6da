"""What the runner holds for one call that may use `net` (no network library here).

`NetScope` is what the caller of `SandboxRunner.run` says about the call (the
tool's name for the audit, the callback that records each request). `NetCall`
is the broker's state of one running call: its declared hosts, the vault
values it may fill in (never sent to the sandbox), its deadline, its request
count. `HttpEvent` is one `tool.http` record: no URL, query or body.
`NetBroker` is the interface the runner speaks to (forge.broker implements it
with aiohttp; the runner never imports it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from forge.net_rules import HostRule
from forge.protocol.net import NetAnswer, NetRequest

Outcome = Literal["ok", "refused", "error"]


@dataclass(frozen=True, slots=True)
class HttpEvent:
    tool: str
    host: str  # as the URL spells it
    declared: bool  # one of the tool's NETWORK hosts (consented at save)
    method: str
    status: int
    bytes: int
    ms: int
    outcome: Outcome
    reason: str = ""  # why it was refused or failed (an enum word)


OnHttp = Callable[[HttpEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class NetScope:
    tool: str = ""
    on_http: OnHttp | None = None
    allowed: bool = True  # False for a draft: its NETWORK is not consented to yet


@dataclass
class NetCall:
    tool: str
    network: tuple[HostRule, ...]
    secrets: Mapping[str, str]
    deadline: float  # time.monotonic() by which the call ends
    rate_key: str
    on_http: OnHttp | None = None
    requests: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    session: Any = None  # the broker's per-call HTTP session, when opened
    pins: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # checked addresses


def http_details(event: HttpEvent) -> dict[str, object]:
    """The `tool.http` audit details of `event`: the host by name only when the tool
    declared it (the person consented to it at save), else under `host_id` (the
    audit writer stores a keyed id); no URL, query or body."""
    details: dict[str, object] = {
        "tool": event.tool,
        "host" if event.declared else "host_id": event.host,
        "method": event.method,
        "status": event.status,
        "bytes": event.bytes,
        "ms": event.ms,
        "outcome": event.outcome,
    }
    if event.reason:
        details["rule"] = event.reason
    return details


class NetBroker(Protocol):
    def open_call(
        self,
        *,
        tool: str,
        network: tuple[HostRule, ...],
        secrets: Mapping[str, str],
        deadline: float,
        rate_key: str,
        on_http: OnHttp | None,
    ) -> NetCall: ...

    async def fetch(self, call: NetCall, request: NetRequest) -> NetAnswer: ...

    async def close_call(self, call: NetCall) -> None: ...

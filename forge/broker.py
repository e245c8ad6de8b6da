"""The network broker: performs a sandboxed tool's `net` requests, in the
daemon's event loop, under the rules of forge.net_rules.

Per request (and per redirect hop, followed here by hand, at most 5): the host
must be one the tool declared in NETWORK; https only unless the operator lists
the host in `[forge] private_hosts`; the name is resolved once and every
address checked (no private, loopback, link-local, multicast, metadata address
unless listed), and the connection goes to exactly those addresses (a resolver
that only answers from the checked set: no DNS rebinding between check and
connect). Caps: `max_requests` per call, `max_body` bytes of response, the
call's own deadline, `rate_per_minute` per tenant. Secret references are
filled into header, query, form and body slots only, and vault values are
masked in every field of the answer before it reaches the tool
(forge.net_answer). Each attempt is reported as
an `HttpEvent` (host, method, status, bytes, ms; never a URL, query or body).
Errors are fixed texts naming the host (never one a redirect chose, unless
declared): never an exception's text (which may quote a URL with a filled-in
query).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from forge.net_answer import RawResponse, refused_answer, tool_answer
from forge.net_call import HttpEvent, NetCall, OnHttp
from forge.net_rules import (
    HostRule,
    Refused,
    address_refusal,
    has_secret,
    header_name_refusal,
    header_value_refusal,
    listed,
    parse_hosts,
    render,
)
from forge.protocol.net import NetAnswer, NetRequest, Parts

log = logging.getLogger(__name__)
REDIRECTS = frozenset({301, 302, 303, 307, 308})
GetAddrInfo = Callable[[str, int], Awaitable[list[str]]]


async def system_getaddrinfo(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class _Pinned(AbstractResolver):
    """Answers only with the addresses the broker checked for this call."""

    def __init__(self, pins: dict[tuple[str, int], list[str]]) -> None:
        self.pins = pins

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addrs = self.pins.get((host, port))
        if not addrs:
            raise OSError(f"{host} was not checked")
        return [
            ResolveResult(
                hostname=host,
                host=a,
                port=port,
                family=socket.AF_INET6 if ":" in a else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for a in addrs
        ]

    async def close(self) -> None:
        return None


class Broker:
    def __init__(
        self,
        *,
        private_hosts: tuple[str, ...] = (),
        rate_per_minute: int = 60,
        max_requests: int = 20,
        max_body: int = 1 << 20,
        max_redirects: int = 5,
        ssl_context: ssl.SSLContext | None = None,
        getaddrinfo: GetAddrInfo = system_getaddrinfo,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.private = parse_hosts(private_hosts)
        self.rate = rate_per_minute
        self.max_requests = max_requests
        self.max_body = max_body
        self.max_redirects = max_redirects
        self.ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self.getaddrinfo = getaddrinfo
        self.clock = clock
        self._recent: dict[str, deque[float]] = {}

    def open_call(
        self,
        *,
        tool: str,
        network: tuple[HostRule, ...],
        secrets: Mapping[str, str],
        deadline: float,
        rate_key: str,
        on_http: OnHttp | None,
    ) -> NetCall:
        return NetCall(tool, network, dict(secrets), deadline, rate_key, on_http)

    async def close_call(self, call: NetCall) -> None:
        for task in call.tasks:
            task.cancel()
        if call.session is not None:
            session, call.session = call.session, None
            await session.close()

    async def fetch(self, call: NetCall, request: NetRequest) -> NetAnswer:
        try:
            return await self._fetch(call, request)
        except Refused as exc:
            return refused_answer(str(exc), call.secrets)

    async def _fetch(self, call: NetCall, req: NetRequest) -> NetAnswer:
        url = URL(req.url)
        headers = _headers(req.headers, call.secrets)
        params = [(k, render(v, call.secrets)) for k, v in req.params]
        body, ctype = _body(req, call.secrets)
        if ctype and not any(k.lower() == "content-type" for k, _ in headers):
            headers.append(("Content-Type", ctype))
        method = req.method
        for hop in range(self.max_redirects + 1):
            answer = await self._hop(
                call, method, url, headers, params, body, req.timeout_s, redirected=hop > 0
            )
            location = answer.headers_get("location")
            if answer.status not in REDIRECTS or location is None:
                return tool_answer(answer, call.secrets)
            target = url.join(URL(location))
            if (target.scheme, target.host, target.port) != (url.scheme, url.host, url.port):
                secret_names = {k.lower() for k, v in req.headers if has_secret(v)}
                headers = [(k, v) for k, v in headers if k.lower() not in secret_names]
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, body = "GET", None
                headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
            url, params = target, []
        raise Refused("redirects", f"more than {self.max_redirects} redirects")

    async def _hop(
        self,
        call: NetCall,
        method: str,
        url: URL,
        headers: list[tuple[str, str]],
        params: list[tuple[str, str]],
        body: bytes | None,
        timeout_s: float,
        *,
        redirected: bool,
    ) -> RawResponse:
        host = (url.host or "").lower()
        declared = listed(call.network, host, url.port or 0, _default_port(url))
        started = self.clock()
        event = _Event(call, host, declared, method)
        try:
            self._count(call)
            await self._check(call, url, host, declared, redirected)
            raw = await self._send(call, method, url, headers, params, body, timeout_s)
        except Refused as exc:
            await event.report(self.clock() - started, "refused", exc.reason)
            raise
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            reason = "timeout" if isinstance(exc, TimeoutError) else "error"
            await event.report(self.clock() - started, "error", reason)
            what = "timed out" if reason == "timeout" else f"failed ({type(exc).__name__})"
            raise Refused(reason, f"the request to {host} {what}") from None
        await event.report(self.clock() - started, "ok", "", raw.status, len(raw.body))
        return raw

    def _count(self, call: NetCall) -> None:
        if call.requests >= self.max_requests:
            raise Refused("count", f"a call may make at most {self.max_requests} requests")
        now = self.clock()
        recent = self._recent.setdefault(call.rate_key, deque())
        while recent and recent[0] <= now - 60:
            recent.popleft()
        if len(recent) >= self.rate:
            raise Refused("rate", f"more than {self.rate} requests a minute; try again later")
        recent.append(now)
        call.requests += 1

    async def _check(
        self, call: NetCall, url: URL, host: str, declared: bool, redirected: bool
    ) -> None:
        if url.scheme not in ("https", "http") or not host:
            raise Refused("scheme", "only https:// URLs may be requested")
        if url.user is not None or url.password is not None:
            raise Refused("scheme", "a URL may not carry a user name or password")
        port = url.port or _default_port(url)
        if not declared and redirected:
            # the server chose that name: it may carry (a transform of) a value
            raise Refused("undeclared", "a redirect led to a host not declared in NETWORK")
        if not declared:
            raise Refused("undeclared", f"host {_spell(host, url)} is not declared in NETWORK")
        private = listed(self.private, host, port, _default_port(url))
        if url.scheme == "http" and not private:
            raise Refused("scheme", f"only https is allowed for {host}")
        try:
            addrs = await self.getaddrinfo(host, port)
        except OSError:
            raise Refused("dns", f"the name {host} could not be resolved") from None
        if not addrs:
            raise Refused("dns", f"the name {host} could not be resolved")
        for addr in addrs:
            why = address_refusal(addr)
            if why is not None and not private:
                raise Refused(
                    "address",
                    f"host {host} resolves to {why}; only public addresses may be reached "
                    "(an operator may list the host in [forge] private_hosts)",
                )
        pins: dict[tuple[str, int], list[str]] = call.pins
        pins[(host, port)] = sorted(set(addrs))

    async def _send(
        self,
        call: NetCall,
        method: str,
        url: URL,
        headers: list[tuple[str, str]],
        params: list[tuple[str, str]],
        body: bytes | None,
        timeout_s: float,
    ) -> RawResponse:
        left = min(timeout_s, call.deadline - self.clock())
        if left <= 0:
            raise Refused("timeout", "the tool's time is up")
        if call.session is None:
            connector = aiohttp.TCPConnector(
                resolver=_Pinned(call.pins), ssl=self.ssl, use_dns_cache=False
            )
            call.session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar()
            )
        session: aiohttp.ClientSession = call.session
        async with session.request(
            method,
            url.with_fragment(None),
            params=params or None,
            headers=headers,
            data=body,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=left),
        ) as resp:
            data = bytearray()
            while chunk := await resp.content.read(1 << 16):
                data += chunk
                if len(data) > self.max_body:
                    raise Refused(
                        "size", f"the response from {url.host} is larger than {self.max_body} bytes"
                    )
            return RawResponse(
                resp.status,
                [(k.lower(), v) for k, v in resp.headers.items()],
                bytes(data),
                resp.charset or "utf-8",
                str(resp.url.with_query(None)),
            )


class _Event:
    def __init__(self, call: NetCall, host: str, declared: bool, method: str) -> None:
        self.call, self.host, self.declared, self.method = call, host, declared, method

    async def report(
        self, seconds: float, outcome: Any, reason: str, status: int = 0, size: int = 0
    ) -> None:
        if self.call.on_http is None:
            return
        ms = max(0, int(seconds * 1000))
        event = HttpEvent(
            self.call.tool, self.host, self.declared, self.method, status, size, ms, outcome, reason
        )
        try:
            await self.call.on_http(event)
        except Exception:  # the audit's own failure must not leak into the tool
            log.exception("recording a tool.http event failed")


def _default_port(url: URL) -> int:
    return 80 if url.scheme == "http" else 443


def _spell(host: str, url: URL) -> str:
    return host if url.explicit_port is None else f"{host}:{url.explicit_port}"


def _headers(
    items: tuple[tuple[str, Parts], ...], secrets: Mapping[str, str]
) -> list[tuple[str, str]]:
    out = []
    for name, parts in items:
        why = header_name_refusal(name)  # a token first: the forbidden names compare to it
        if why is None:
            value = render(parts, secrets)
            why = header_value_refusal(name, value)
        if why is not None:
            raise Refused("header", why)
        out.append((name, value))
    return out


def _body(req: NetRequest, secrets: Mapping[str, str]) -> tuple[bytes | None, str]:
    if req.body_kind == "json":
        return render(req.body, secrets, "json").encode(), "application/json"
    if req.body_kind == "text":
        return render(req.body, secrets).encode(), "text/plain; charset=utf-8"
    if req.body_kind == "form":
        from urllib.parse import urlencode

        pairs = [(k, render(v, secrets)) for k, v in req.form]
        return urlencode(pairs).encode(), "application/x-www-form-urlencoded"
    return None, ""

"""The broker's rules, pure: which hosts a tool may reach, which addresses are
refused, how a secret reference is filled into its slot.

- A tool declares `NETWORK = ["api.example.com", "api.example.com:8443"]`; a
  bare host allows the scheme's default port (443; 80 for plain http), a
  `host:port` that port only. The operator's `[forge] private_hosts` uses the
  same spelling.
- https only, unless the URL's host (and port) is in `private_hosts`.
- After resolution every address must be global unicast (forge.net_addresses:
  the IANA special-purpose registries; every IPv6 form that carries an IPv4
  address is judged by that address, the deprecated forms are refused) unless
  the host is in `private_hosts`.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from forge.net_addresses import refusal
from forge.protocol.net import Parts

HOST_RE = re.compile(
    r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*"
)


class Refused(Exception):
    """A request the rules refuse; the text is safe to show to the tool."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class HostRule:
    host: str
    port: int | None  # None: the scheme's default port

    def matches(self, host: str, port: int, default_port: int) -> bool:
        return self.host == host and (self.port or default_port) == port


def parse_host(entry: str) -> HostRule | None:
    """`host` or `host:port` (lower-case name or IPv4; `[v6]:port`), else None."""
    text = entry.strip().lower()
    port: int | None = None
    if text.startswith("["):
        end = text.find("]")
        host, rest = text[1:end], text[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
        text = host + rest
        host_part, _, port_text = host, "", rest[1:]
    else:
        host_part, _, port_text = text.partition(":")
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            return None
        port = int(port_text)
    if ":" not in host_part and not HOST_RE.fullmatch(host_part):
        return None
    return HostRule(host_part, port)


def parse_hosts(entries: Iterable[str]) -> tuple[HostRule, ...]:
    rules = []
    for entry in entries:
        rule = parse_host(entry)
        if rule is None:
            raise ValueError(f"not a host or host:port: {entry!r}")
        rules.append(rule)
    return tuple(rules)


def listed(rules: Iterable[HostRule], host: str, port: int, default_port: int) -> bool:
    return any(r.matches(host, port, default_port) for r in rules)


def address_refusal(address: str) -> str | None:
    """Why `address` may not be reached (None: a global unicast address); the
    table and the IPv4-embedding forms are forge.net_addresses'."""
    return refusal(address)


def render(parts: Parts, secrets: Mapping[str, str], escape: str = "") -> str:
    """The text of a slot with each vault reference replaced by its value, escaped
    for the slot: "" (header, query, form: encoded later), "json" (inside a JSON
    string)."""
    out = []
    for kind, text in parts:
        if kind == "t":
            out.append(text)
            continue
        value = secrets.get(text)
        if value is None:
            raise Refused("secret", f"secret {text!r} is not available to this tool")
        out.append(json.dumps(value, ensure_ascii=False)[1:-1] if escape == "json" else value)
    return "".join(out)


def has_secret(parts: Parts) -> bool:
    return any(kind == "v" for kind, _ in parts)


def mask(text: str, secrets: Mapping[str, str], *, fold_case: bool = False) -> str:
    """`text` with every vault value the call holds replaced by `[vault:name]`
    (plain and URL-encoded spellings; the agent loop masks the rest). With
    `fold_case`, regardless of case (header and host names are case-blind)."""
    for name, value in secrets.items():
        if len(value) < 4:
            continue
        marker = f"[vault:{name}]"
        for spelling in dict.fromkeys((value, quote(value, safe=""))):
            if fold_case:
                text = re.sub(re.escape(spelling), marker.replace("\\", "\\\\"), text, flags=re.I)
            else:
                text = text.replace(spelling, marker)
    return text

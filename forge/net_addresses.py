"""Which resolved addresses a tool's request may reach: pure, and independent of
the Python version's own `ipaddress.is_global` (which changed between releases).

Built from the IANA special-purpose address registries (IPv4 and IPv6, with
their "Globally Reachable" column), RFC 4291 (IPv4-compatible and site-local,
both deprecated), RFC 6052 and RFC 8215 (NAT64), RFC 3056 (6to4), RFC 4380
(Teredo) and RFC 5214 (ISATAP). An IPv6 address that carries an IPv4 address
is judged by the IPv4 address inside (every one it carries, for Teredo), so no
spelling of 127.0.0.1 or 169.254.169.254 passes as global; the deprecated forms
are refused outright. Everything else must be global unicast: IPv4 outside
every non-global registry block and multicast, IPv6 inside 2000::/3 and outside
every non-global block.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPv4 = ipaddress.IPv4Address
IPv6 = ipaddress.IPv6Address
_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

METADATA = frozenset({IPv4("169.254.169.254"), IPv6("fd00:ec2::254")})


def _table4(rows: Iterable[tuple[str, str]]) -> tuple[tuple[_V4, str], ...]:
    return tuple((_V4(net), why) for net, why in rows)


def _table6(rows: Iterable[tuple[str, str]]) -> tuple[tuple[_V6, str], ...]:
    return tuple((_V6(net), why) for net, why in rows)


# IANA IPv4 special-purpose registry, "Globally Reachable" = False (or N/A),
# most specific first; plus multicast (RFC 5771).
_V4_GLOBAL_EXCEPTIONS = (_V4("192.0.0.9/32"), _V4("192.0.0.10/32"))  # PCP, TURN anycast
_V4_REFUSED = _table4(
    [
        ("0.0.0.0/8", "an unspecified address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("224.0.0.0/4", "a multicast address"),
        ("255.255.255.255/32", "a broadcast address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("192.0.0.0/24", "an IETF protocol assignment"),
        ("192.0.2.0/24", "a documentation address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("192.88.99.0/24", "a deprecated 6to4 relay anycast address"),
        ("240.0.0.0/4", "a reserved address"),
    ]
)
# IANA IPv6 special-purpose registry (non-global rows), the RFC 4291
# deprecated forms, and what lies outside global unicast.
_V6_GLOBAL_EXCEPTIONS = tuple(
    _V6(n)
    for n in (
        "2001:1::1/128",  # PCP anycast
        "2001:1::2/128",  # TURN anycast
        "2001:1::3/128",  # DNS-SD service registration anycast
        "2001:3::/32",  # AMT
        "2001:4:112::/48",  # AS112-v6
        "2001:20::/28",  # ORCHIDv2
        "2001:30::/28",  # drone remote ID
    )
)
_V6_REFUSED = _table6(
    [
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "a deprecated IPv4-compatible address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a deprecated site-local address"),
        ("ff00::/8", "a multicast address"),
        ("fc00::/7", "a private (unique local) address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("100::/64", "a discard-only address"),
        ("100:0:0:1::/64", "a dummy address"),
        ("2001:2::/48", "a benchmarking address"),
        ("2001:10::/28", "a deprecated ORCHID address"),
        ("2001:db8::/32", "a documentation address"),
        ("3fff::/20", "a documentation address"),
        ("5f00::/16", "a segment-routing address"),
        ("2001::/23", "an IETF protocol assignment"),
    ]
)
_GLOBAL_UNICAST = _V6("2000::/3")
_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")  # SIIT, RFC 2765
_NAT64 = _V6("64:ff9b::/96")
_NAT64_LOCAL = _V6("64:ff9b:1::/48")
_SIXTOFOUR = _V6("2002::/16")
_TEREDO = _V6("2001::/32")
_COMPATIBLE = _V6("::/96")
_THIS_NETWORK = _V4("0.0.0.0/8")
_LOCAL_FORM = "a local-use NAT64 address"
_ISATAP_IID = 0x00005EFE  # RFC 5214: IID 00-00-5E-FE (or 02-00-5E-FE) + IPv4
_ISATAP_MASK = 0xFDFFFFFF  # ignore the universal/local bit


def refusal(address: str) -> str | None:
    """Why `address` (as resolved, maybe with a `%zone`) may not be reached;
    None for a global unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, IPv4):
        return refusal_v4(ip)
    return refusal_v6(ip)


def refusal_v4(ip: IPv4) -> str | None:
    if ip in METADATA:
        return "a cloud metadata address"
    if any(ip in net for net in _V4_GLOBAL_EXCEPTIONS):
        return None
    return next((why for net, why in _V4_REFUSED if ip in net), None)


def embedded_v4(ip: IPv6) -> list[tuple[str, IPv4]]:
    """Every IPv4 address `ip` carries, each with the form that carries it."""
    value = int(ip)
    low32 = IPv4(value & 0xFFFFFFFF)
    if ip in _MAPPED:
        return [("an IPv4-mapped address", low32)]
    if ip in _TRANSLATED:
        return [("an IPv4-translated address", low32)]
    if ip in _NAT64:
        return [("a NAT64 address", low32)]
    if ip in _NAT64_LOCAL:
        # the position depends on the operator's prefix: judge every candidate
        # (zero padding reads as 0.0.0.0/8, which says nothing here)
        return [(_LOCAL_FORM, v4) for v4 in _rfc6052_candidates(value)]
    if ip in _SIXTOFOUR:
        return [("a 6to4 address", IPv4((value >> 80) & 0xFFFFFFFF))]
    if ip in _TEREDO:
        server = IPv4((value >> 64) & 0xFFFFFFFF)
        client = IPv4((value & 0xFFFFFFFF) ^ 0xFFFFFFFF)  # obfuscated (RFC 4380 4)
        return [("a Teredo address (server)", server), ("a Teredo address (client)", client)]
    if ip not in _COMPATIBLE and ((value >> 32) & _ISATAP_MASK) == _ISATAP_IID:
        return [("an ISATAP interface id", low32)]
    return []


def _rfc6052_candidates(value: int) -> list[IPv4]:
    """The IPv4 address at each RFC 6052 position a network-specific prefix
    inside 64:ff9b:1::/48 may use (/96 first, the usual one; then /64, /56,
    /48); bits 64-71 (the `u` octet) never carry address bits."""
    bits = format(value, "0128b")
    without_u = bits[:64] + bits[72:]
    out = []
    for prefix_len in (96, 64, 56, 48):
        start = prefix_len if prefix_len <= 64 else prefix_len - 8
        out.append(IPv4(int(without_u[start : start + 32], 2)))
    return out


def refusal_v6(ip: IPv6) -> str | None:
    if ip in METADATA:
        return "a cloud metadata address"
    for form, v4 in embedded_v4(ip):
        why = refusal_v4(v4)
        if why is not None and not (form == _LOCAL_FORM and v4 in _THIS_NETWORK):
            return f"{why} ({v4}) inside {form}"
    if ip in _TEREDO:
        return "a Teredo tunnel address"  # tunnels to its client over UDP: never needed
    if any(ip in net for net in _V6_GLOBAL_EXCEPTIONS):
        return None
    if ip in _MAPPED or ip in _NAT64 or ip in _SIXTOFOUR:
        return None  # judged by the IPv4 inside, which is global
    if ip in _TRANSLATED:
        return "an IPv4-translated address (not routed)"
    why = next((why for net, why in _V6_REFUSED if ip in net), None)
    if why is not None:
        return why
    return None if ip in _GLOBAL_UNICAST else "a reserved address"

"""Which client a peer address counts as, for the per-client caps of roost's HTTP
servers (the web server's and `roost mcp --http`'s connection tables, the
WhatsApp webhook's body budget):
IPv4 as is (also when IPv4-mapped), IPv6 by its /64 (one machine easily holds a
whole /64), anything else (a Unix socket, no address) as given."""

from __future__ import annotations

import ipaddress


def client_key(host: str | None) -> str:
    """The per-client bucket of a peer address."""
    text = host or ""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)

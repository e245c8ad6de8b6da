"""Which resolved addresses the broker may connect to (issue 21, item 5).

The table is built from the IANA IPv4 and IPv6 special-purpose address
registries (every block, its first and last address, refused unless the
registry says "Globally Reachable: True"), and every IPv6 form that carries an
IPv4 address is built here by its RFC's own layout (RFC 4291 IPv4-compatible and
IPv4-mapped, RFC 2765 IPv4-translated, RFC 6052 NAT64 at each prefix length and
RFC 8215 local-use NAT64, RFC 3056 6to4, RFC 4380 Teredo with the obfuscated
client, RFC 5214 ISATAP interface ids) around every non-global IPv4 address:
each must be refused. Before this change `::127.0.0.1`, `2002:7f00:1::`,
`64:ff9b:1::a9fe:a9fe`, `::ffff:0:7f00:1`, `fec0::1` and ISATAP ids under a
global prefix were judged global.
"""

from __future__ import annotations

import ipaddress
import json
import time
from ipaddress import IPv4Address, IPv6Address

import pytest

from forge.broker import Broker
from forge.net_addresses import _rfc6052_candidates, embedded_v4
from forge.net_rules import address_refusal as refusal
from forge.net_rules import parse_hosts
from forge.protocol.net import NetRequest

# IANA IPv4 special-purpose registry (2024), (block, globally reachable), plus
# multicast (RFC 5771) and the cloud metadata address.
IPV4_REGISTRY: list[tuple[str, bool]] = [
    ("0.0.0.0/8", False),
    ("0.0.0.0/32", False),
    ("10.0.0.0/8", False),
    ("100.64.0.0/10", False),
    ("127.0.0.0/8", False),
    ("169.254.0.0/16", False),
    ("172.16.0.0/12", False),
    ("192.0.0.0/24", False),
    ("192.0.0.0/29", False),
    ("192.0.0.8/32", False),
    ("192.0.0.9/32", True),
    ("192.0.0.10/32", True),
    ("192.0.0.170/32", False),
    ("192.0.0.171/32", False),
    ("192.0.2.0/24", False),
    ("192.31.196.0/24", True),
    ("192.52.193.0/24", True),
    ("192.88.99.0/24", False),
    ("192.168.0.0/16", False),
    ("192.175.48.0/24", True),
    ("198.18.0.0/15", False),
    ("198.51.100.0/24", False),
    ("203.0.113.0/24", False),
    ("240.0.0.0/4", False),
    ("255.255.255.255/32", False),
    ("224.0.0.0/4", False),
    ("169.254.169.254/32", False),
]
# IANA IPv6 special-purpose registry (2024-10, with RFC 9637, 9602, 9665,
# 9780), (block, globally reachable); the forms carrying IPv4 are below.
IPV6_REGISTRY: list[tuple[str, bool]] = [
    ("::1/128", False),
    ("::/128", False),
    ("64:ff9b:1::/48", False),
    ("100::/64", False),
    ("100:0:0:1::/64", False),
    ("2001::/23", False),
    ("2001::/32", False),
    ("2001:1::1/128", True),
    ("2001:1::2/128", True),
    ("2001:1::3/128", True),
    ("2001:2::/48", False),
    ("2001:3::/32", True),
    ("2001:4:112::/48", True),
    ("2001:10::/28", False),
    ("2001:20::/28", True),
    ("2001:30::/28", True),
    ("2001:db8::/32", False),
    ("2620:4f:8000::/48", True),
    ("3fff::/20", False),
    ("5f00::/16", False),
    ("fc00::/7", False),
    ("fe80::/10", False),
    # RFC 4291: deprecated; multicast; outside global unicast
    ("::/96", False),
    ("fec0::/10", False),
    ("ff00::/8", False),
    ("4000::/3", False),
    ("8000::/1", False),
    ("fd00:ec2::254/128", False),
]
PUBLIC_V4 = ["8.8.8.8", "1.1.1.1", "9.9.9.9", "151.101.1.69", "93.184.215.14"]
PUBLIC_V6 = ["2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450:4001:81b::200e"]


def _ends(block: str) -> list[str]:
    net = ipaddress.ip_network(block)
    return sorted({str(net[0]), str(net[-1]), str(net[net.num_addresses // 2])})


def _v4_cases() -> list[tuple[str, bool]]:
    out = [(a, glob) for block, glob in IPV4_REGISTRY for a in _ends(block)]
    return out + [(a, True) for a in PUBLIC_V4]


def _v6_cases() -> list[tuple[str, bool]]:
    out = []
    for block, glob in IPV6_REGISTRY:
        for a in _ends(block):
            # a Teredo address inside a global exception would carry two IPv4s
            out.append((a, glob))
    return out + [(a, True) for a in PUBLIC_V6]


BAD_V4 = sorted(
    {a for block, glob in IPV4_REGISTRY if not glob for a in _ends(block)}
    - {"192.0.0.9", "192.0.0.10"}
)


def _forms(v4: str) -> dict[str, str]:
    """`v4` inside every IPv6 form that carries one, built by the RFCs' layouts."""
    n = int(IPv4Address(v4))
    teredo_server = IPv4Address("65.54.227.120")  # RFC 4380's example server
    return {
        "IPv4-compatible (RFC 4291)": str(IPv6Address(n)),
        "IPv4-mapped (RFC 4291)": f"::ffff:{v4}",
        "IPv4-translated (RFC 2765)": str(IPv6Address((0xFFFF << 48) | n)),
        "NAT64 well-known (RFC 6052)": f"64:ff9b::{v4}",
        "NAT64 local-use /96 (RFC 8215)": str(IPv6Address((0x64FF9B0001 << 80) | n)),
        "NAT64 local-use /48 (RFC 6052 layout)": str(
            IPv6Address((0x64FF9B0001 << 80) | ((n >> 16) << 64) | ((n & 0xFFFF) << 40))
        ),
        "NAT64 local-use /56": str(
            IPv6Address((0x64FF9B0001 << 80) | ((n >> 24) << 72) | ((n & 0xFFFFFF) << 32))
        ),
        "NAT64 local-use /64": str(IPv6Address((0x64FF9B0001 << 80) | (n << 24))),
        "6to4 (RFC 3056)": str(IPv6Address((0x2002 << 112) | (n << 80) | 1)),
        "Teredo server (RFC 4380)": str(
            IPv6Address((0x20010000 << 96) | (n << 64) | 0xF227F227F227)
        ),
        "Teredo client, obfuscated (RFC 4380)": str(
            IPv6Address(
                (0x20010000 << 96) | (int(teredo_server) << 64) | (0x8000 << 48) | (n ^ 0xFFFFFFFF)
            )
        ),
        "ISATAP id under a global prefix (RFC 5214)": str(
            IPv6Address((0x2A001450 << 96) | (0x00005EFE << 32) | n)
        ),
        "ISATAP id, universal bit (RFC 5214)": str(
            IPv6Address((0x2A001450 << 96) | (0x02005EFE << 32) | n)
        ),
        "ISATAP id under link-local": f"fe80::5efe:{v4}",
    }


FORM_CASES = [(name, v4, addr) for v4 in BAD_V4 for name, addr in _forms(v4).items()]


@pytest.mark.parametrize(("address", "reachable"), _v4_cases())
def test_ipv4_registry(address: str, reachable: bool) -> None:
    assert (refusal(address) is None) is reachable, (address, refusal(address))


@pytest.mark.parametrize(("address", "reachable"), _v6_cases())
def test_ipv6_registry(address: str, reachable: bool) -> None:
    assert (refusal(address) is None) is reachable, (address, refusal(address))


@pytest.mark.parametrize(("form", "v4", "address"), FORM_CASES)
def test_every_form_carrying_a_non_global_ipv4_is_refused(form: str, v4: str, address: str) -> None:
    why = refusal(address)
    assert why is not None, (form, v4, address)


@pytest.mark.parametrize("v4", PUBLIC_V4)
def test_forms_carrying_a_public_ipv4(v4: str) -> None:
    """Mapped, NAT64 (well-known) and 6to4 around a public address are reachable;
    the deprecated, the local-use and the tunnel forms are not, whatever they carry."""
    forms = _forms(v4)
    allowed = {"IPv4-mapped (RFC 4291)", "NAT64 well-known (RFC 6052)", "6to4 (RFC 3056)"}
    allowed |= {"ISATAP id under a global prefix (RFC 5214)", "ISATAP id, universal bit (RFC 5214)"}
    for name, address in forms.items():
        assert (refusal(address) is None) is (name in allowed), (name, address, refusal(address))


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("::127.0.0.1", "deprecated IPv4-compatible"),
        ("::169.254.169.254", "deprecated IPv4-compatible"),
        ("2002:7f00:1::", "loopback address (127.0.0.1) inside a 6to4"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata address (169.254.169.254) inside a NAT64"),
        ("64:ff9b:1::a9fe:a9fe", "cloud metadata address (169.254.169.254) inside a local-use"),
        ("64:ff9b:1::808:808", "a local-use NAT64 address"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "documentation address (192.0.2.45)"),
        ("2001:0:808:808:8000:63bf:f7f7:f7f7", "Teredo tunnel"),
        ("fec0::1", "deprecated site-local"),
        ("fe80::1%eth0", "link-local"),
    ],
)
def test_reasons_name_the_embedded_address(address: str, words: str) -> None:
    assert words in (refusal(address) or ""), refusal(address)


@pytest.mark.parametrize(
    ("embedded", "v4"),
    [  # RFC 6052 section 2.4's table: 192.0.2.33 under each prefix length
        ("2001:db8:122:c000:2:2100::", "192.0.2.33"),  # /48
        ("2001:db8:122:3c0:0:221::", "192.0.2.33"),  # /56
        ("2001:db8:122:344:c0:2:2100:0", "192.0.2.33"),  # /64
        ("2001:db8:122:344::192.0.2.33", "192.0.2.33"),  # /96
    ],
)
def test_rfc6052_positions(embedded: str, v4: str) -> None:
    assert IPv4Address(v4) in _rfc6052_candidates(int(IPv6Address(embedded)))


def test_teredo_and_6to4_agree_with_the_rfc_examples() -> None:
    teredo = IPv6Address("2001:0:4136:e378:8000:63bf:3fff:fdd2")  # RFC 4380 example
    assert [v4 for _, v4 in embedded_v4(teredo)] == list(teredo.teredo or ())
    sixtofour = IPv6Address("2002:c000:221::1")  # 192.0.2.33
    assert [v4 for _, v4 in embedded_v4(sixtofour)] == [sixtofour.sixtofour]


async def _ask(broker: Broker, host: str) -> str:
    call = broker.open_call(
        tool="me.t",
        network=parse_hosts([host]),
        secrets={},
        deadline=time.monotonic() + 30,
        rate_key="t",
        on_http=None,
    )
    try:
        answer = await broker.fetch(call, NetRequest("GET", f"https://{host}/x"))
    finally:
        await broker.close_call(call)
    assert not answer.ok
    return answer.error


@pytest.mark.parametrize(
    "address",
    ["::127.0.0.1", "2002:7f00:1::", "64:ff9b:1::a9fe:a9fe", "::ffff:0:7f00:1", "fec0::1"],
)
async def test_the_broker_refuses_before_connecting(address: str) -> None:
    """A declared name resolving to one of the reported forms: refused, and the
    resolver's answer is the only address ever considered."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return [address]

    error = await _ask(Broker(getaddrinfo=resolve), "api.example.com")
    assert asked == ["api.example.com"]
    assert "resolves to" in error and "only public addresses" in error, error
    assert json.dumps(error)  # a plain, showable text

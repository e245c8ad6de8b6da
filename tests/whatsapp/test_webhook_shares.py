"""One client's share of the webhook's body budget: one address cannot keep Meta out.

Through the real web server and the real WhatsApp row, over raw sockets (a
client that sends its headers and all but one byte of a body, then waits):
the attack of session 40's attacker pass (one address holding six stalled
unsigned bodies, the whole 16 MiB, so Meta's signed delivery was 503 for as
long as it refilled them) now holds one full body: the others are 503 with
`Retry-After`, and Meta's small signed delivery is answered 200 and
handled, also from that same address. Then the budget's rules alone
(`BodyBudget`) and how addresses are grouped into clients (`client_key`).
"""

from __future__ import annotations

import json
from pathlib import Path

from bridge.channels.whatsapp.budget import (
    BODY_BUDGET,
    MAX_BODY,
    RESERVE,
    SMALL_BODY,
    BodyBudget,
    is_small,
)
from bridge.types.clients import client_key as client_of
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.waits import shut
from tests.whatsapp.conftest import ALICE, running, wa_settings
from tests.whatsapp.test_webhook_flood import slow_post, status_of, until_reading


async def test_one_address_cannot_keep_meta_out(home: Path, fake: FakeWhatsApp) -> None:
    backend = ScriptedBackend("hi")
    async with running(wa_settings(home, fake), fake, backend) as r:
        # the attack: full bodies, each one byte short, from the address Meta posts from
        held = [await slow_post(r.web_port, MAX_BODY, MAX_BODY - 1)]
        await until_reading(r, MAX_BODY - 1)
        for _ in range(5):  # the rest of the 16 MiB: beyond the client's share, refused
            reader, writer = await slow_post(r.web_port, MAX_BODY, MAX_BODY - 1)
            assert await status_of(reader) == (503, "5")
            await shut(writer)
        reader, writer = await slow_post(r.web_port, None, 64 * 1024)  # streamed: the same
        assert await status_of(reader) == (503, "5")
        await shut(writer)
        assert r.channel.reading == MAX_BODY - 1 and r.channel.busy == 6
        # Meta's real, signed delivery: taken and answered
        _, body = hooks.text(fake.phone_number_id, ALICE, "are you there?")
        raw = json.dumps(body).encode()
        assert await fake.post(raw, {"X-Hub-Signature-256": fake.sign(raw)}) == (200, "ok")
        await r.channel.idle()
        assert fake.texts(ALICE) == ["hi"]
        for _, writer in held:
            await shut(writer)
        await until_reading(r, 0)
    assert len(backend.requests) == 1


async def test_a_client_past_its_share_gets_503_another_still_fits(
    home: Path, fake: FakeWhatsApp
) -> None:
    async with running(wa_settings(home, fake), fake, ScriptedBackend("hi")) as r:
        held = [await slow_post(r.web_port, MAX_BODY, MAX_BODY - 1, "127.0.0.2")]
        await until_reading(r, MAX_BODY - 1)
        reader, writer = await slow_post(r.web_port, MAX_BODY, 1, "127.0.0.2")
        assert await status_of(reader) == (503, "5")  # its own share is full
        await shut(writer)
        # a small body has a share of its own (64 KiB): one stalled one fits, no more
        held.append(await slow_post(r.web_port, SMALL_BODY, SMALL_BODY - 1, "127.0.0.2"))
        await until_reading(r, MAX_BODY + SMALL_BODY - 2)
        reader, writer = await slow_post(r.web_port, SMALL_BODY, 10, "127.0.0.2")
        assert await status_of(reader) == (503, "5")
        await shut(writer)
        held.append(await slow_post(r.web_port, MAX_BODY, MAX_BODY - 1, "127.0.0.3"))
        await until_reading(r, 2 * MAX_BODY + SMALL_BODY - 3)  # another address's is not
        assert r.channel.busy == 2
        for _, writer in held:
            await shut(writer)
        await until_reading(r, 0)


def test_one_client_holds_one_full_body_and_a_small_share() -> None:
    budget = BodyBudget()
    assert budget.take("a", False, MAX_BODY)
    assert not budget.fits("a", False, 1)  # its share of big bodies is full
    assert budget.take("a", True, SMALL_BODY)  # small ones have a share of their own
    assert not budget.fits("a", True, 1)
    assert budget.fits("b", False, MAX_BODY) and budget.fits("b", True, SMALL_BODY)
    assert budget.of("a") == MAX_BODY + SMALL_BODY
    budget.give("a", False, MAX_BODY)
    budget.give("a", True, SMALL_BODY)
    assert budget.reading == 0 and budget.of("a") == 0
    assert not budget._big and not budget._small  # nothing left per client


def test_the_reserve_is_for_small_bodies_only() -> None:
    budget = BodyBudget()
    big = (BODY_BUDGET - RESERVE) // MAX_BODY
    for n in range(big):  # five clients fill all but the reserve
        assert budget.take(f"big{n}", False, MAX_BODY)
    assert not budget.fits("new", False, 1)  # a big body of a new client: refused
    fill = RESERVE // SMALL_BODY
    for n in range(fill):  # small ones still fit, until the reserve is full too
        assert budget.take(f"small{n}", True, SMALL_BODY)
    assert budget.reading == BODY_BUDGET
    assert not budget.fits("new", True, 1)
    assert big == 5 and fill == 16  # the clients an attacker needs to fill it all


def test_small_means_a_declared_length_of_at_most_64_kib() -> None:
    assert is_small(0) and is_small(SMALL_BODY)
    assert not is_small(SMALL_BODY + 1) and not is_small(None)  # chunked: never small


def test_a_client_is_an_ipv4_address_or_an_ipv6_64() -> None:
    assert client_of("203.0.113.7") == "203.0.113.7"
    assert client_of("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_of("2001:db8:1:2:aaaa::1") == client_of("2001:db8:1:2:ffff::9")
    assert client_of("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert client_of("2001:db8:1:3::1") != client_of("2001:db8:1:2::1")
    assert client_of("fe80::1%eth0") == "fe80::/64"
    assert client_of(None) == "" and client_of("/run/roost.sock") == "/run/roost.sock"

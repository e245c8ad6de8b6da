"""The webhook's gate: Meta's verification, the signature on the raw body, the size cap.

Through the real web server and the real WhatsApp row: an unsigned or badly
signed POST is 401/403 and nothing else happens (no answer, no id recorded,
no audit record, the model not asked); a body over 3 MiB (`MAX_BODY`, the
most Meta sends) is 413 before it is parsed, whether it says so in
Content-Length or only streams, and one of 3 MiB is taken; the GET
subscription check echoes the challenge only for `subscribe` and the right
token. The pure checks (`signature.check`, `challenge`) also take the
shapes Meta's header can come in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bridge.channels.whatsapp.channel import MAX_BODY
from bridge.channels.whatsapp.signature import challenge, check, signature
from tests.conftest import ScriptedBackend
from tests.fakes import whatsapp_payloads as hooks
from tests.fakes.fake_whatsapp import FakeWhatsApp
from tests.whatsapp.conftest import ALICE, APP_SECRET, VERIFY, running, wa_settings

SECRET = APP_SECRET.encode()


def test_the_signature_is_hmac_sha256_of_the_raw_body() -> None:
    body = json.dumps({"object": "whatsapp_business_account", "x": "Grüße"}).encode()
    good = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert signature(SECRET, body) == good
    assert check(SECRET, body, good) == "ok"
    assert check(SECRET, body, good.upper().replace("SHA256=", "sha256=")) == "ok"  # hex case
    assert check(SECRET, body + b" ", good) == "wrong", "one byte more: another body"
    reparsed = json.dumps(json.loads(body), ensure_ascii=False).encode()
    assert check(SECRET, reparsed, good) == "wrong", "the raw bytes, not the parsed JSON"
    assert check(b"another-secret", body, good) == "wrong"


@pytest.mark.parametrize(
    "header",
    [None, "", "sha256=", "sha1=" + "0" * 40, "sha256=xyz", "sha256=" + "0" * 63, "0" * 64],
)
def test_a_missing_or_malformed_header_is_missing(header: str | None) -> None:
    assert check(SECRET, b"{}", header) == "missing"


def test_no_app_secret_accepts_nothing() -> None:
    assert check(b"", b"{}", signature(b"", b"{}")) == "missing"


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        (
            {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"},
            "1158201444",
        ),
        ({"hub.mode": "subscribe", "hub.verify_token": "wrong", "hub.challenge": "1"}, None),
        ({"hub.mode": "unsubscribe", "hub.verify_token": VERIFY, "hub.challenge": "1"}, None),
        ({"hub.mode": "subscribe", "hub.challenge": "1"}, None),
        ({"hub.mode": "subscribe", "hub.verify_token": VERIFY}, None),
        ({"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "x" * 300}, None),
        ({"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "a\nb"}, None),
    ],
)
def test_the_subscription_check(query: dict[str, str], answer: str | None) -> None:
    assert challenge(query, VERIFY.encode()) == answer


def test_no_verify_token_configured_verifies_nothing() -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": "", "hub.challenge": "1"}
    assert challenge(query, b"") is None


@pytest.fixture
async def up(home: Path, fake: FakeWhatsApp) -> AsyncIterator[tuple[FakeWhatsApp, object]]:
    backend = ScriptedBackend("must not be asked")
    async with running(wa_settings(home, fake), fake, backend) as r:
        yield fake, r


async def _nothing_happened(r: object) -> None:
    from tests.whatsapp.conftest import Running

    assert isinstance(r, Running)
    assert r.fake.sent == [] and r.fake.reads == []
    assert r.backend.requests == []  # type: ignore[attr-defined]
    assert r.events("message.received") == [] and r.events("access.refused") == []
    assert await r.roost.database.fetch_value("SELECT count(*) FROM whatsapp_seen") == 0


async def test_unsigned_and_badly_signed_posts_change_nothing(
    up: tuple[FakeWhatsApp, object],
) -> None:
    fake, r = up
    _, body = hooks.text(fake.phone_number_id, ALICE, "hello")
    raw = json.dumps(body).encode()
    assert (await fake.post(raw))[0] == 401
    assert (await fake.post(raw, {"X-Hub-Signature-256": "sha256=" + "0" * 64}))[0] == 403
    other = "sha256=" + hmac.new(b"not-the-app-secret", raw, hashlib.sha256).hexdigest()
    assert (await fake.post(raw, {"X-Hub-Signature-256": other}))[0] == 403
    signed_other = fake.sign(raw + b"\n")  # signed, but for another body
    assert (await fake.post(raw, {"X-Hub-Signature-256": signed_other}))[0] == 403
    await r.channel.idle()  # type: ignore[attr-defined]
    await _nothing_happened(r)


async def test_a_body_over_3_mib_is_refused_before_parsing(
    up: tuple[FakeWhatsApp, object],
) -> None:
    fake, r = up
    assert MAX_BODY == 3 * 1024 * 1024
    head, tail = b'{"object": "whatsapp_business_account", "pad": "', b'"}'
    largest = head + b"x" * (MAX_BODY - len(head) - len(tail)) + tail
    assert (await fake.post(largest, {"X-Hub-Signature-256": fake.sign(largest)}))[0] == 200
    big = largest[:-2] + b'x"}'
    assert (await fake.post(big, {"X-Hub-Signature-256": fake.sign(big)}))[0] == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: it only streams
        for start in range(0, len(big), 1 << 20):
            yield big[start : start + (1 << 20)]

    async with aiohttp.ClientSession() as http:
        headers = {"X-Hub-Signature-256": fake.sign(big)}
        async with http.post(fake.webhook_url, data=chunks(), headers=headers) as response:
            assert response.status == 413
    await _nothing_happened(r)


async def test_meta_verifies_the_webhook_with_a_get(up: tuple[FakeWhatsApp, object]) -> None:
    fake, _ = up
    async with aiohttp.ClientSession() as http:
        good = {"hub.mode": "subscribe", "hub.verify_token": VERIFY, "hub.challenge": "1158201444"}
        async with http.get(fake.webhook_url, params=good) as response:
            assert (response.status, await response.text()) == (200, "1158201444")
        bad = {**good, "hub.verify_token": "guess"}
        async with http.get(fake.webhook_url, params=bad) as response:
            assert response.status == 403


async def test_a_signed_body_that_is_not_a_webhook_is_taken_and_counted(
    up: tuple[FakeWhatsApp, object],
) -> None:
    fake, r = up
    raw = b'{"object": "page", "entry": []}'
    assert (await fake.post(raw, {"X-Hub-Signature-256": fake.sign(raw)}))[0] == 200
    raw = b"not json at all"
    assert (await fake.post(raw, {"X-Hub-Signature-256": fake.sign(raw)}))[0] == 200
    assert r.channel.ignored["malformed"] == 2  # type: ignore[attr-defined]
    await _nothing_happened(r)

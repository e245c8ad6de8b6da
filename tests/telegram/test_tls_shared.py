"""The Telegram channel's HTTP clients share one verifying TLS context a process.

httpx reads the whole certificate bundle for every client it makes; a channel holds
two and is made again at every start (57 ms of CPU to make one, 0.6-1.1 ms now).
`verified()` makes the context once; what it makes must verify exactly as httpx's own
default would.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from bridge.channels.common.tls import verified
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.tls_checks import assert_verifies
from tests.waits import until


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every TLS context made from now on (httpx makes its own through
    `ssl.create_default_context`); this process's shared one is made first."""
    verified()
    made: list[object] = []
    default = ssl.create_default_context

    def counted(*args: object, **kwargs: object) -> ssl.SSLContext:
        made.append(args)
        return default(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    return made


def test_the_shared_context_verifies_like_httpx() -> None:
    assert verified() is verified()  # made once
    assert_verifies(verified())


async def test_channels_read_no_certificate_bundle_again_and_still_answer(
    home: Path, fake: FakeBotAPI, made: list[object]
) -> None:
    settings = tg_settings(home, fake)
    for attempt in range(2):  # the channel made and started twice, as a restart does
        async with running(settings, fake, ScriptedBackend("hello back")):
            fake.push_text(ALICE, f"hi {attempt}")
            await until(lambda n=attempt: len(fake.sent_to(ALICE)) > n, "the answer")
    assert [m.text for m in fake.sent_to(ALICE)] == ["hello back", "hello back"]
    assert made == []


async def test_a_webhook_channel_reads_no_certificate_bundle_either(
    home: Path, fake: FakeBotAPI, made: list[object]
) -> None:
    hooked = tg_settings(
        home,
        fake,
        mode="webhook",
        webhook_url="https://bot.example.org/telegram",
        webhook_secret="a-webhook-secret-of-enough-length",
    )
    async with running(hooked, fake, start=False) as run:
        assert run.channel.app.updater is None  # nothing polls
    assert made == []

"""`/unpair`: a paired person ends their own binding; their next message is a stranger's.

The real roost and python-telegram-bot Application against the fake Bot API.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.config import load_settings
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, GROUP, TOKEN, running
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI
from tests.telegram.test_pairing_revoke import PAIRED, pair_as, settle, with_tenants


async def test_unpair_ends_the_binding_and_the_next_message_is_refused(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("for bob", "alice 1")
    async with running(with_tenants(home, fake, "bob"), fake, backend) as run:
        await pair_as(fake, run.pairing, "bob")
        fake.push_text(PAIRED, "first")
        await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 3)
        fake.push_text(PAIRED, "/unpair")
        await fake.wait_until(lambda: len(fake.sent_to(PAIRED)) == 4)
        assert fake.sent_to(PAIRED)[3].text.startswith("Unpaired")
        assert await run.pairing.bindings() == []
        fake.push_text(PAIRED, "second")
        fake.push_text(PAIRED, "/whoami")
        await settle(run, 1)
        replies = [m.text for m in fake.sent_to(PAIRED)[4:]]
        assert len(replies) == 1 and "I don't know you" in replies[0]
        assert [r.messages[-1].content for r in backend.requests] == ["first", "sync 1"]
        revoked = [e for e in run.audit.events if e[0] == "pairing.revoked"]
        assert revoked == [
            (
                "pairing.revoked",
                "bob",
                {"channel": "telegram", "identity": str(PAIRED), "by": "user"},
            )
        ]


async def test_unpair_works_in_a_group_and_leaves_config_mapped_people_alone(
    home: Path, fake: FakeBotAPI
) -> None:
    backend = ScriptedBackend("alice 1")
    settings = load_settings(
        home=home,
        telegram={"token": TOKEN, "api_base_url": fake.base_url, "allowed_groups": [GROUP]},
        tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {}},
    )
    async with running(settings, fake, backend) as run:
        await pair_as(fake, run.pairing, "bob")
        fake.push_text(PAIRED, f"/unpair@{BOT_USERNAME}", chat_id=GROUP, chat_type="supergroup")
        await fake.wait_until(lambda: not run.pairing.mirrored("telegram", str(PAIRED)))
        # alice is mapped in the config: /unpair cannot remove that, and says so
        fake.push_text(ALICE, "/unpair")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 1)
        assert "not paired" in fake.sent_to(ALICE)[0].text
        await settle(run, 2)
        assert fake.sent_to(ALICE)[1].text == "alice 1"
        assert [e[1:] for e in run.audit.events if e[0] == "pairing.revoked"] == [
            ("bob", {"channel": "telegram", "identity": str(PAIRED), "by": "user"})
        ]

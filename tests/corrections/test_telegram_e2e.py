"""Corrections over Telegram: the real python-telegram-bot against the fake Bot API.

The offer arrives as an inline keyboard on the reply's last message; a press
(`callback_query`) is answered and runs its command as the presser's own
message, so it keeps the correction for alice and confirms nothing for bob.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.config import load_settings
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, TOKEN, running
from tests.telegram.fake_bot_api import FakeBotAPI

BOB = 222222


async def test_press_keeps_the_correction_and_the_next_prompt_shows_it(home: Path) -> None:
    backend = ScriptedBackend("Alles klar, ab jetzt auf Deutsch.", "Hallo!")
    async with FakeBotAPI(TOKEN, max_poll_s=2.0) as fake:
        settings = load_settings(
            home=home,
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
        )
        async with running(settings, fake, backend):
            fake.push_text(ALICE, "Ab jetzt antworte bitte immer auf Deutsch.")
            await fake.wait_until(lambda: len(fake.keyboard(ALICE)) == 2)
            (memory_label, memory), (steer_label, steer) = fake.keyboard(ALICE)
            assert (memory_label, steer_label) == ("Keep as memory", "Keep as steering")
            oid = memory.split()[1]
            assert steer == f"/yes {oid} steering"
            last = fake.sent_to(ALICE)[-1]
            assert last.reply_markup is not None and "standing instruction" in last.text

            # bob presses alice's button (a forged press on her chat): his own tenant, nothing
            fake.push_callback(BOB, steer, last.message_id, chat_id=ALICE)
            fake.push_text(BOB, f"/yes {oid}")
            await fake.wait_until(lambda: sum("No offer" in m.text for m in fake.sent_to(BOB)) == 1)
            await fake.wait_until(lambda: len(fake.answered) == 1)
            await fake.wait_until(lambda: any("No offer" in m.text for m in fake.sent_to(ALICE)))
            alice = TenantDirs.of(home, "alice")
            assert not alice.steering.exists()

            fake.push_callback(ALICE, steer, last.message_id)
            await fake.wait_until(lambda: any("Kept as" in m.text for m in fake.sent_to(ALICE)))
            assert len(fake.answered) == 2
            assert "Ab jetzt antworte bitte immer auf Deutsch." in alice.steering.read_text()
            fake.push_text(ALICE, "Hi")
            await fake.wait_until(lambda: any(m.text == "Hallo!" for m in fake.sent_to(ALICE)))
    assert "Ab jetzt antworte bitte immer auf Deutsch." in backend.requests[-1].system
    assert not TenantDirs.of(home, "bob").steering.exists()

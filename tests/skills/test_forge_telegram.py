"""skill-forge over Telegram: the real python-telegram-bot against the fake Bot API,
the OpenAI backend against the fake OpenAI server (scripted to call skill_propose).

Alice sees the proposal in her chat, nothing is written until she sends
/skill save, the skill is then offered to the model, /skill undo takes it away;
Bob, another tenant on the same bot, sees and can save none of it.
"""

from __future__ import annotations

from pathlib import Path

from bridge.core.config import load_settings
from bridge.llm.openai import OpenAIBackend
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.telegram.conftest import ALICE, TOKEN, running
from tests.telegram.fake_bot_api import FakeBotAPI

API_KEY = "sk-test-key-000000000000"
BOB = 222222
BODY = (
    "1. Jeder sagt, was er gestern erledigt hat.\n"
    "2. Jeder sagt, was er heute vorhat.\n"
    "3. Blocker notieren und nach dem Meeting klären."
)
PROPOSE = ToolCalls(
    [
        Call(
            "skill_propose",
            {"name": "standup", "description": "Run the daily stand-up in German", "body": BODY},
        )
    ]
)


def texts(fake: FakeBotAPI, chat: int) -> list[str]:
    return [m.text for m in fake.sent_to(chat)]


def has(fake: FakeBotAPI, chat: int, part: str) -> bool:
    return any(part in t for t in texts(fake, chat))


async def test_proposal_save_offer_and_undo_over_telegram(home: Path) -> None:
    async with (
        FakeOpenAI(api_key=API_KEY, models=["m1"]) as model,
        FakeBotAPI(TOKEN, max_poll_s=2.0) as fake,
    ):
        settings = load_settings(
            home=home,
            telegram={"token": TOKEN, "api_base_url": fake.base_url},
            tenants={"alice": {"telegram_ids": [ALICE]}, "bob": {"telegram_ids": [BOB]}},
        )
        backend = OpenAIBackend(model.base_url, API_KEY, "m1", max_retries=0)
        model.script(PROPOSE, Text("Ich habe dir einen Skill vorgeschlagen."))
        async with running(settings, fake, backend) as run:
            skill = run.roost.tenant_dirs("alice").skills / "standup.md"
            fake.push_text(ALICE, "Mach aus unserem Stand-up-Ablauf bitte einen Skill.")
            await fake.wait_until(lambda: has(fake, ALICE, "/skill save standup"))
            reply = next(t for t in texts(fake, ALICE) if "/skill save standup" in t)
            assert reply.startswith("Ich habe dir einen Skill vorgeschlagen.")
            assert "📝 New skill proposed: standup" in reply
            assert "Blocker notieren und nach dem Meeting klären." in reply
            assert not skill.exists()

            fake.push_text(BOB, "/skill")
            await fake.wait_until(lambda: has(fake, BOB, "No skills yet"))
            assert not has(fake, BOB, "standup")
            fake.push_text(BOB, "/skill save standup")
            await fake.wait_until(lambda: has(fake, BOB, "There is no skill proposal"))
            assert not (run.roost.tenant_dirs("bob").skills / "standup.md").exists()
            assert not skill.exists()

            fake.push_text(ALICE, "/skill save standup")
            await fake.wait_until(lambda: has(fake, ALICE, "Saved skill standup"))
            assert BODY in skill.read_text()

            model.script(Text("Los geht's: erst gestern, dann heute, dann Blocker."))
            fake.push_text(ALICE, "Starte das Stand-up")
            await fake.wait_until(lambda: has(fake, ALICE, "Los geht's"))
            system = model.requests[-1]["messages"][0]["content"]
            assert "- standup — Run the daily stand-up in German" in system

            fake.push_text(ALICE, "/skill undo")
            await fake.wait_until(lambda: has(fake, ALICE, "Undid saving standup"))
            assert not skill.exists()
            bob_saw = [t for t in texts(fake, BOB) if "standup" in t]
            assert len(bob_saw) == 1 and bob_saw[0].startswith("There is no skill proposal")

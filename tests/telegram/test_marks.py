"""On Telegram, a memory the model saved shows as a marker line under the answer
with an inline "↩ Undo" button; pressing it reverts exactly that save."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ScriptedBackend
from tests.telegram.conftest import ALICE, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.waits import until


async def test_a_saved_memory_is_marked_and_undone_with_one_tap(
    home: Path, fake: FakeBotAPI
) -> None:
    args = {"name": "coffee", "type": "user", "description": "black", "content": "black"}
    backend = ScriptedBackend([("memory_save", json.dumps(args))], "Noted.")
    async with running(tg_settings(home, fake), fake, backend) as run:
        fake.push_text(ALICE, "I take my coffee black")
        await run.idle()
        (answer,) = fake.sent_to(ALICE)
        assert answer.text == "Noted.\n\n📝 Saved to memory: coffee"
        assert fake.keyboard(ALICE) == [("↩ Undo memory 'coffee'", "/memory undo coffee")]
        dirs = run.roost.tenant_dirs("alice")
        assert [t.name for t in run.roost.loadout.memory.store.topics(dirs)] == ["coffee"]
        fake.push_callback(ALICE, "/memory undo coffee", answer.message_id)
        await run.idle()
        await until(lambda: len(fake.sent_to(ALICE)) == 2, "the undo's reply")
        assert fake.sent_to(ALICE)[1].text.startswith("Undid saving 'coffee'")
        assert run.roost.loadout.memory.store.topics(dirs) == []

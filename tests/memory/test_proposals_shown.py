"""`/memory proposals` shows every word `/memory keep` stores.

A proposal's sentence may be up to `facts.MAX_SENTENCE` (200) characters; the
list used to show its 150-character description while a keep stored the
whole sentence (attacker pass atk4, F1c). Now the list shows the whole
sentence, the day and the conversation it came from (the note's content),
and the reply to a keep repeats the sentence kept. Through the real
commands, as the terminal sends them.
"""

from __future__ import annotations

import io
import re

from bridge.app.build import Roost
from bridge.channels.terminal.channel import send_once
from bridge.memory.facts import MAX_SENTENCE
from bridge.memory.files import MAX_DESCRIPTION
from bridge.memory.proposals import Candidate, ProposalBox

SENTENCE = (
    "I live in Leipzig near the big park with my two cats and my partner, in a flat on "
    "the third floor of an old house with a green door, and my favourite café is Riquet."
)
AT_MS = 1_679_302_800_000  # 2023-03-20


async def _send(roost: Roost, text: str) -> str:
    out = io.StringIO()
    await send_once(roost.core.handle, text, "t1", out)
    return out.getvalue()


async def test_the_list_shows_the_whole_sentence_a_keep_stores(roost: Roost) -> None:
    assert MAX_DESCRIPTION < len(SENTENCE) <= MAX_SENTENCE
    dirs = roost.tenant_dirs("local").ensure()
    ProposalBox(dirs.memory).offer([Candidate("home", SENTENCE, AT_MS, "chat-42")], [])

    listed = await _send(roost, "/memory proposals")
    assert f": where I live: {SENTENCE} (said 2023-03-20, imported conversation chat-42)" in listed
    [pid] = re.findall(r"• (\w{4}): where I live:", listed)

    kept = await _send(roost, f"/memory keep {pid}")
    assert kept.startswith("Kept as 'where I live'") and f"“{SENTENCE}”" in kept
    [topic] = roost.loadout.memory.store.topics(dirs)
    stored = f"{topic.description}\n{topic.content}"
    for word in stored.replace("...", " ").split():  # every stored word was in the list
        assert word in listed, word

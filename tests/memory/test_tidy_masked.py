"""What `/memory tidy` asks the model holds no vault value, however a topic spells it.

The request shows each topic's content with its whitespace joined and cut at
`MAX_PROMPT_CONTENT` characters; it used to be masked only after that (atk39 F6),
so the start of a value across the cut, or a value holding a line break or two
spaces, reached the model. Topic files can be edited by hand (README), so they
are written here as files. Through the real command, as the terminal sends it.
"""

from __future__ import annotations

import io
import json

from bridge.app.build import Roost
from bridge.channels.terminal.channel import send_once
from bridge.loadout import vault
from bridge.memory.consolidate import MAX_PROMPT_CONTENT
from bridge.memory.files import Topic, render_topic
from bridge.types.backend import ModelRequest
from tests.conftest import ScriptedBackend

KEY = "Rt5pLm8Qz2Wx7Nv4Kb9J"
NOTE = "line1-Xy7q\nline2  Zk9w"  # a line break and two spaces inside the value


async def test_the_tidy_request_masks_each_topic_before_it_is_cut_and_joined(
    roost: Roost,
) -> None:
    dirs = roost.tenant_dirs("local").ensure()
    vault.set_value(dirs, "API", KEY)
    vault.set_value(dirs, "NOTE", NOTE)
    meta = {"updated": "2026-12-01"}
    long = "w " * ((MAX_PROMPT_CONTENT - 10) // 2) + "pw " + KEY + " end"
    for topic in (
        Topic("wifi", "reference", "home network", long, meta),
        Topic("notes", "reference", "a note", f"the note:\n{NOTE}\nthat is all", meta),
    ):
        dirs.memory.mkdir(parents=True, exist_ok=True)
        (dirs.memory / topic.filename).write_text(render_topic(topic))
    asked: list[ModelRequest] = []

    def plan(request: ModelRequest) -> str:
        asked.append(request)
        return json.dumps({"merge": [], "drop": ["notes"]})

    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps = [plan]
    await send_once(roost.core.handle, "/memory tidy", "t1", io.StringIO())
    [request] = asked
    text = request.messages[0].content
    assert "content: w w" in text and "the note: [vault:NOTE] that is all" in text, text
    assert KEY[:6] not in text and "line1-Xy7q" not in text and "Zk9w" not in text, text

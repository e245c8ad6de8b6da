"""The terminal prints a reply's actions as a hint, and `/yes` typed there keeps the correction."""

from __future__ import annotations

import io
import re

from bridge.app.build import Roost
from bridge.channels.terminal.channel import send_once


async def test_terminal_hint_then_yes(roost: Roost) -> None:
    backend = roost.backend
    backend.steps = ["Sure."]  # type: ignore[attr-defined]
    out = io.StringIO()
    await send_once(roost.core.handle, "From now on, never use emojis.", "t1", out)
    hint = out.getvalue().splitlines()[-1]
    match = re.fullmatch(
        r"\(reply /yes (\w{4}) to keep as memory, or /yes \1 steering to keep as steering\)", hint
    )
    assert match is not None, hint
    out = io.StringIO()
    await send_once(roost.core.handle, f"/yes {match.group(1)}", "t1", out)
    assert out.getvalue().startswith(
        "Kept as a feedback memory ('correction emoji'): `From now on, never use emojis.`."
    )
    dirs = roost.tenant_dirs("local")
    [topic] = roost.loadout.memory.store.topics(dirs)
    assert topic.type == "feedback" and topic.description == "From now on, never use emojis."

"""Where should "now" go? Bytes of the model request that stay a byte-identical prefix.

Builds the bench loadout of bench/prompt.py (a ~50 KB system prompt) and a
chat of 20 exchanges, then compares two consecutive requests of the chat
(turn k, then turn k+1 which appends one exchange) sent a few seconds apart
and a minute apart, for two placements of the current minute:

  A  a last system-prompt block ("## Now ...", minute resolution)
  B  a short message just before the newest user message (not stored)

Prints the identical prefix in bytes and as a share of the previous request.
A provider's prompt cache reuses exactly that prefix.

Run: .venv/bin/python bench/prompt_now.py [--quick] (it takes seconds either way;
`--quick` is accepted so every bench has the same quick mode).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
from pathlib import Path

from bench.prompt import NOW, Stores, make, populate
from bridge.app.database import open_database
from bridge.core.config import load_settings
from bridge.prompt.now import now_note
from bridge.types.tenant_dirs import TenantDirs

ZONE = "Europe/Berlin"
HISTORY = 20


def request(system: str, history: list[tuple[str, str]], text: str, note: str | None) -> bytes:
    msgs = [{"role": "system", "content": system}]
    for asked, said in history:
        msgs += [{"role": "user", "content": asked}, {"role": "assistant", "content": said}]
    if note is not None:
        msgs.append({"role": "user", "content": note})
    msgs.append({"role": "user", "content": text})
    return json.dumps({"messages": msgs}, ensure_ascii=False).encode()


def common(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = next((i for i in range(n) if a[i] != b[i]), n)
    return i


async def system_prompt() -> str:
    """The bench loadout's system prompt (bench/prompt.py's loadout, rendered once)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROOST_CONFIG"] = str(Path(tmp) / "roost.toml")
        (Path(tmp) / "roost.toml").write_text("")
        settings = load_settings(home=Path(tmp) / "home", loadout={"memory_chars": 20_000})
        settings.home.mkdir()
        db = await open_database(settings.home / "roost.db")
        try:
            stores = await Stores(db).loaded()
            dirs = TenantDirs.of(settings.home, "alice").ensure()
            lo = make(settings, stores, dirs, True)
            await populate(settings, lo, dirs, stores)
            await lo.prompt.prepare(dirs.tenant)
            return lo.prompt.render(dirs, "web", "c1", "m0", NOW).text
        finally:
            await db.aclose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the same run (it is quick already)")
    ap.parse_args()
    system = asyncio.run(system_prompt())
    history = [
        (f"question {i} " + "words " * 30, f"answer {i} " + "text " * 120) for i in range(HISTORY)
    ]
    t0 = NOW - NOW % 60 + 5  # 5 s into a minute
    for gap in (5, 60):
        t1 = t0 + gap
        prev_a = request(system + "\n\n## Now\n" + now_note(t0, ZONE), history, "q", None)
        next_a = request(
            system + "\n\n## Now\n" + now_note(t1, ZONE), [*history, ("q", "a")], "q2", None
        )
        prev_b = request(system, history, "q", now_note(t0, ZONE))
        next_b = request(system, [*history, ("q", "a")], "q2", now_note(t1, ZONE))
        for name, prev, nxt in (("A block", prev_a, next_a), ("B message", prev_b, next_b)):
            same = common(prev, nxt)
            print(
                f"{gap:>3} s apart, {name:9}: {same:,} of {len(prev):,} bytes identical "
                f"({100 * same / len(prev):.1f}%)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How much of the system prompt Anthropic's prompt cache can serve, three ways.

Builds the bench loadout of bench/prompt.py (a ~50 KB system prompt, skills
whose grades move every turn, live and shadow style bullets), renders ten
consecutive turns of one chat and sends each to the fake Messages API
(tests/fakes/fake_anthropic.py, which counts cache writes and reads by the
exact bytes of the marked prefix, 4 characters a token). Side by side:

  none    no cache_control
  whole   the whole system prompt marked (breaks whenever a volatile block moves)
  stable  system[:stable_chars] marked: the leading stable blocks (what roost does)

Prints system-prompt tokens written to and read from the cache over the ten
turns, and the share of them read. Then the time to assemble the prompt
(bench/prompt.py's table): unchanged (cached), one file changed, a grade
moved, full re-read, with and without the recall injection, each as a ratio
to the floor measured in the same run. Run: `python -m bench.prompt_cache`
[--quick] (`--quick`: four turns instead of ten, 200 timed renders per row).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

from bench.prompt import NOW, Stores, make, populate, print_rows, timing_rows
from bridge.app.database import open_database
from bridge.core.config import load_settings
from bridge.llm.anthropic import AnthropicBackend
from bridge.types.backend import ChatMessage, ModelRequest
from bridge.types.tenant_dirs import TenantDirs
from tests.fakes.fake_anthropic import FakeAnthropic

TURNS = 10


async def render_turns(turns: int = TURNS) -> list[tuple[str, int]]:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROOST_CONFIG"] = str(Path(tmp) / "roost.toml")
        (Path(tmp) / "roost.toml").write_text("")
        settings = load_settings(home=Path(tmp) / "home", loadout={"memory_chars": 20_000})
        settings.home.mkdir()
        db = await open_database(settings.home / "roost.db")
        stores = await Stores(db).loaded()
        dirs = TenantDirs.of(settings.home, "alice").ensure()
        lo = make(settings, stores, dirs, True)
        await populate(settings, lo, dirs, stores)
        out = []
        for turn in range(turns):
            if turn % 3 == 0:  # grades move
                await stores.grades.apply(dirs.tenant, f"skill-{turn % 50:02d}", "rejection", NOW)
            await lo.prompt.prepare(dirs.tenant)
            rendered = lo.prompt.render(dirs, "web", "c1", f"m{turn}", NOW + 60 * turn)
            out.append((rendered.text, rendered.stable_chars))
        await db.aclose()
    return out


async def measure(turns: list[tuple[str, int]], how: str) -> tuple[int, int]:
    async with FakeAnthropic(api_key="k", models=["m"]) as fake:
        backend = AnthropicBackend("k", "m", base_url=fake.base_url)
        for system, stable in turns:
            mark = {"none": 0, "whole": len(system), "stable": stable}[how]
            request = ModelRequest(system, [ChatMessage("user", "hi")], stable_chars=mark)
            async for _ in backend.stream(request):
                pass
        await backend.aclose()
    written = sum(u["cache_creation_input_tokens"] for u in fake.usages)
    read = sum(u["cache_read_input_tokens"] for u in fake.usages)
    return written, read


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="four turns instead of ten")
    quick = ap.parse_args().quick
    count = 4 if quick else TURNS
    turns = asyncio.run(render_turns(count))
    system, stable = turns[-1]
    distinct = len({s for s, _ in turns})
    print(f"system prompt {len(system):,} chars; stable prefix {stable:,} chars ", end="")
    print(f"({100 * stable / len(system):.1f}%); {distinct} distinct prompts in {count} turns")
    total = sum(len(s) // 4 for s, _ in turns)
    print(f"{'marking':8} {'written':>9} {'read':>9} {'read share of system tokens':>30}")
    for how in ("none", "whole", "stable"):
        written, read = asyncio.run(measure(turns, how))
        print(f"{how:8} {written:>9,} {read:>9,} {100 * read / total:>29.1f}%")
    print()
    print("time to assemble the system prompt, per turn (bench/prompt.py):")
    print_rows(*timing_rows(200 if quick else 2000))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

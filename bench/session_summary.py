"""Long conversations: what the model still sees, summarised vs dropped, and what it costs.

Runs a 200-turn conversation through the real SessionStore (SQLite in a
temporary directory) and the real Compactor with an in-process model that
answers at once, twice: once with summaries, once with a model that cannot
summarise (the fallback, the old behaviour: oldest turns dropped). Each turn
carries one tool step. Prints, side by side: the turns the last request
still reflects (kept turns plus those the summary covers), the characters
of the last history, how many summary calls the conversation needed, and
the median time of the store work on the reply's path (load + append).

Run: .venv/bin/python -m bench.session_summary [--quick] (20 turns)
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

from bridge.app.database import open_database
from bridge.core.compactor import Compactor
from bridge.core.sessions import SessionKey
from bridge.core.turn import ChosenModel
from bridge.loadout.mask import Masker
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import (
    BackendError,
    ChatMessage,
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
)
from tests.sessions_kit import store_on

TURNS, BUDGET = 200, 32_000
KEY = SessionKey("bench", "web", "c")

PLAIN = Masker({})  # no vault: what a tenant without secrets gets


class Summariser:
    name = "bench"

    def __init__(self, works: bool) -> None:
        self.works, self.calls = works, 0

    def describe(self) -> str:
        return "bench"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        if not self.works:
            raise BackendError("unavailable", "down")
        yield TextDelta("They discussed " + "topics, " * 300)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


@asynccontextmanager
async def held(model: Summariser) -> AsyncIterator[ChosenModel]:
    yield ChosenModel("bench", model)


async def run(works: bool, turns: int) -> tuple[int, int, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        database = await open_database(Path(tmp) / "roost.db")
        store = store_on(database, BUDGET, 7 * 86400)
        model = Summariser(works)
        compactor = Compactor(store, MemoryAudit())
        path_ms: list[float] = []
        for n in range(turns):
            call = ToolCallRequest(f"c{n}", "me__lookup", '{"q": "x"}')
            steps = (
                ChatMessage("assistant", "", (call,)),
                ChatMessage("tool", "result " * 60, tool_call_id=f"c{n}"),
            )
            started = time.perf_counter()
            await store.load(KEY, float(n))
            await store.append(
                KEY,
                PLAIN.mask(f"question {n} " + "q" * 300),
                PLAIN.mask("answer " + "a" * 600),
                f"{n}",
                float(n),
                tuple(PLAIN.message(m) for m in steps),
            )
            path_ms.append((time.perf_counter() - started) * 1000)
            compactor.after_turn(KEY, partial(held, model), PLAIN.mask)
            await compactor.idle()
        session = await store.load(KEY, float(turns))
        seen = session.kept + session.summarised
        await database.aclose()
        return seen, session.chars, model.calls, statistics.median(path_ms)


async def main() -> None:
    logging.getLogger("bridge").setLevel(logging.ERROR)  # the fallback's one warning
    turns = 20 if "--quick" in sys.argv[1:] else TURNS  # quick: CI, it still runs
    summary, dropped = await run(True, turns), await run(False, turns)
    print(f"{turns} turns, budget {BUDGET:,} characters, one tool step per turn")
    print(f"{'':38}{'summaries':>12}{'drop (fallback)':>18}")
    rows = (
        ("turns the last request reflects", 0, "{}"),
        ("characters of the last history", 1, "{:,}"),
        ("summary calls (failed ones too)", 2, "{}"),
        ("store work on the reply path, median ms", 3, "{:.2f}"),
    )
    for label, i, fmt in rows:
        print(f"{label:38}{fmt.format(summary[i]):>12}{fmt.format(dropped[i]):>18}")


if __name__ == "__main__":
    asyncio.run(main())

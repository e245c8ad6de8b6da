"""Token usage: counted per tenant, model and UTC day from what the server reports.

The fake OpenAI server sends a usage chunk when the request asks for it with
`stream_options.include_usage` (as api.openai.com does), with the cached part
in `usage.prompt_tokens_details.cached_tokens`; /usage and `roost usage`
show the sums. Counting is one atomic statement: two processes adding at the
same time lose nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from bridge.app.database import open_database
from bridge.core.db import connect
from bridge.core.usage import Tokens, UsageStore
from tests.conftest import Clock
from tests.fakes.fake_openai import FakeOpenAI, Status, Text
from tests.models.conftest import ALICE, Make, models_toml, telegram, web, write_config

ROOST = [sys.executable, "-m", "bridge.cli.main"]
DAY = 86_400


def rows(home: Path) -> list[tuple[object, ...]]:
    db = connect(home / "roost.db")
    try:
        return db.execute(
            "SELECT tenant, model, day, turns, prompt_tokens, completion_tokens, cached_tokens "
            "FROM token_usage ORDER BY tenant, model, day"
        ).fetchall()
    finally:
        db.close()


async def test_each_turn_adds_the_tokens_the_server_reported(
    make: Make, home: Path, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    first.script(Text("one", usage=(1200, 30, 1024)), Text("two", usage=(1300, 20, 1024)))
    second.script(Text("three", usage=(900, 70)))
    chat = web(roost)
    await chat.say("a")
    await chat.say("b")
    await chat.say("/model smart")
    await chat.say("c")
    await telegram(roost, ALICE).say("d")  # echo default usage: counted for alice
    assert all(body["stream_options"] == {"include_usage": True} for body in first.requests)
    found = rows(home)
    day = "2027-01-15"  # the test clock, 1_800_000_000 s
    assert ("local", "default", day, 2, 2500, 50, 2048) in found
    assert ("local", "smart", day, 1, 900, 70, 0) in found
    assert [r[:4] for r in found if r[0] == "alice"] == [("alice", "default", day, 1)]


async def test_slash_usage_shows_today_and_this_month_per_model(
    make: Make, clock: Clock, first: FakeOpenAI, second: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, second))
    chat = web(roost)
    first.script(Text("x", usage=(1000, 10, 800)), Text("y", usage=(2000, 20, 0)))
    second.script(Text("z", usage=(500, 5)))
    await chat.say("yesterday")
    clock.advance(DAY)
    await chat.say("today")
    await chat.say("/model smart")
    await chat.say("on smart")
    shown = (await chat.say("/usage")).text
    today, month = shown.split("This month")
    assert "Today (2027-01-16)" in today
    assert "default: 2,000 in (cached 0), 20 out — 1 turn" in today
    assert "smart: 500 in (cached 0), 5 out — 1 turn" in today
    assert "(2027-01)" in month
    assert "default: 3,000 in (cached 800), 30 out — 2 turns" in month
    assert "Budgets: none" in month
    other = (await telegram(roost, ALICE).say("/usage")).text  # another tenant
    assert other.count("nothing yet") == 2


async def test_a_failed_turn_counts_nothing_and_its_retry_counts_once(
    make: Make, home: Path, first: FakeOpenAI
) -> None:
    roost = await make(models_toml(first, None).replace("[llm]\n", "[llm]\nmax_retries = 0\n"))
    first.script(Status(500, "overloaded"), Text("fine", usage=(100, 5)))
    chat = web(roost)
    assert (await chat.say("hello")).kind == "error"
    assert rows(home) == []
    await chat.say("hello")
    assert [r[3:6] for r in rows(home)] == [(1, 100, 5)]


async def test_counting_is_atomic_across_processes(home: Path) -> None:
    connect(home / "roost.db").close()
    code = (
        "import asyncio, sys; from pathlib import Path\n"
        "from bridge.app.database import open_database\n"
        "from bridge.core.usage import Tokens, UsageStore\n"
        "async def main():\n"
        "    db = await open_database(Path(sys.argv[1]))\n"
        "    store = UsageStore(db)\n"
        "    for _ in range(300):\n"
        "        await store.record('alice', 'default', '2027-01-15', Tokens(10, 2, 1))\n"
        "    await db.aclose()\n"
        "asyncio.run(main())\n"
    )
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", code, str(home / "roost.db"))
        for _ in range(3)
    ]
    assert [await p.wait() for p in procs] == [0, 0, 0]
    assert rows(home) == [("alice", "default", "2027-01-15", 900, 9000, 1800, 900)]


async def test_roost_usage_prints_a_table_and_json(home: Path) -> None:
    db = await open_database(home / "roost.db")
    store = UsageStore(db)
    await store.record("alice", "default", "2027-01-15", Tokens(12_000, 300, 8_000))
    await store.record("alice", "smart", "2027-01-16", Tokens(500, 50, 0))
    await store.record("bob", "default", "2027-01-15", Tokens(7, 3, 0))
    await store.record("alice", "default", "2026-12-31", Tokens(999, 1, 0))  # another month
    await db.aclose()
    write_config("[limits]\nmonthly_tokens = 1000000\n[tenants.alice]\ndaily_tokens = 50000\n")
    env = {k: v for k, v in os.environ.items()}
    table = await run(env, "usage", "--month", "2027-01")
    assert table.splitlines()[0] == "token usage, 2027-01 (UTC)"
    head, *lines = table.splitlines()[1:4]
    assert head.split() == ["tenant", "model", "turns", "in", "cached", "out", "in+out"]
    assert lines[0].split() == ["alice", "default", "1", "12,000", "8,000", "300", "12,300"]
    assert lines[1].split() == ["alice", "smart", "1", "500", "0", "50", "550"]
    assert "bob: budgets monthly" in table and "alice: budgets daily" in table
    data = json.loads(await run(env, "usage", "--month", "2027-01", "--tenant", "alice", "--json"))
    assert data["month"] == "2027-01"
    assert [(r["model"], r["total_tokens"], r["cached_tokens"]) for r in data["rows"]] == [
        ("default", 12_300, 8_000),
        ("smart", 550, 0),
    ]
    assert data["budgets"]["alice"]["daily"] == 50_000
    assert data["budgets"]["alice"]["monthly"] == 1_000_000
    december = json.loads(await run(env, "usage", "--month", "2026-12", "--json"))
    assert [r["total_tokens"] for r in december["rows"]] == [1000]


async def test_roost_usage_explains_a_bad_month(home: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "usage", "--month", "January", stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert "'January' is not a month: write YYYY-MM" in err.decode()


async def run(env: dict[str, str], *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()

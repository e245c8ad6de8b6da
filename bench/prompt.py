"""Prompt benchmark: per-turn snapshot + nine-block assembly with a large loadout.

Loadout: 200 memory topics, a steering tree of 40 includes (20 operator, 20
tenant), 50 personal tools (with a usage database), 10 style bullets (7 live,
3 shadow) and 50 graded skills in roost.db, profile, vault, persona and
audience, wired as the daemon wires them (the production views of blocks
7-9). Measures p50/p99 of `LoadoutPrompt.render` (what `TurnRunner` calls
once per turn, after the turn's `prepare` of the tenant's database rows)
when nothing changed; when only a session row was written to roost.db in
between (what every turn does); right after one steering file changed;
right after one skill grade moved; and with no caching at all
(every file re-read and every block re-rendered each turn). The same with
the recall injection a turn adds (`MemoryNotes.note`: the Now note and the
memory topics that match the message, scored against all 200), unchanged
and right after one topic was rewritten. Each of these twice: through the
cache the daemon uses, watched by inotify (`bridge.core.dirwatch`), and the
stat-checked one. The stores run on the `Database` (`SqliteDatabase`) with
their mirrors watched as the daemon watches them (`TableChanges.watch`).
The floor, measured in the same run: what no proof of "unchanged" can skip
(one look at the inotify queue, and an await, what a turn's `prepare` is
when nothing changed). Prints wall and this thread's CPU per render (p50;
CPU is less moved by other load), the load average, each row's ratio to the
floor and the full re-read's ratio to it.

Run: .venv/bin/python bench/prompt.py [--turns 2000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bridge.app.database import open_database
from bridge.app.loadout import Loadout, build_loadout, persona_dirs
from bridge.app.memory_notes import MemoryNotes
from bridge.core.config import Settings, load_settings
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache, NoCache
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.db_changes import TableChanges, watching
from bridge.memory.store import Provenance
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.view import SavedToolsView
from bridge.skills.grades import SkillGrades
from bridge.skills.view import GradedSkills
from bridge.storage.protocol import Database
from bridge.style.rules import Counts
from bridge.style.store import StyleStore
from bridge.style.view import LearnedStyle
from bridge.types.audit_sink import NullAudit
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from forge import toolmeta
from forge.toolmeta import ToolMeta
from forge.usage import UsageStore

NOW = 1_800_000_000.0


class Stores:
    """The stores the prompt reads, sharing one `TableChanges` (as `bridge.app.wiring`)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.changes = TableChanges(db)
        self.chats = ChatSettings(db, self.changes)
        self.grades = SkillGrades(db, self.changes)
        self.style = StyleStore(db, self.changes)

    async def loaded(self) -> Stores:
        await self.chats.load()
        return self


async def populate(settings: Settings, lo: Loadout, dirs: TenantDirs, stores: Stores) -> None:
    home = settings.home
    for top, base in ((home / "STEERING.md", home / "steer"), (dirs.steering, dirs.root / "steer")):
        base.mkdir(exist_ok=True)
        refs = " ".join(f"@steer/r{i}.md" for i in range(20))
        top.write_text(f"Rules. Also follow {refs}.\n")
        for i in range(20):
            (base / f"r{i}.md").write_text(f"Rule file {i}: " + "be precise. " * 30 + "\n")
    prov = Provenance("person", "web", "c1", "m")
    for i in range(200):
        lo.memory.store.save(
            dirs,
            f"topic {i:03d}",
            ("user", "feedback", "project", "reference")[i % 4],
            f"summary of topic {i}",
            "body " * 40,
            prov,
            NOW,
        )
    dirs.user_md.write_text("".join(f"- fact{i}: value {i}\n" for i in range(20)))
    for i in range(5):
        (dirs.vault / f"SECRET_{i}").write_text(f"secret-value-{i}-abcdef")
    for i in range(50):
        (dirs.skills / f"skill-{i:02d}.md").write_text(
            f"---\nname: skill-{i:02d}\ndescription: does thing {i}\n---\nbody\n"
        )
        meta = ToolMeta(
            f"tool_{i:02d}", f"tool {i}", {}, (), "0" * 64, int(NOW - i * 259_200) * 1000
        )
        (dirs.tools / f"me.tool_{i:02d}.json").write_bytes(toolmeta.dumps(meta))
    UsageStore(dirs.tools).record("tool_03", True, int(NOW * 1000))  # usage.sqlite exists
    for i in range(50):
        await stores.grades.apply(dirs.tenant, f"skill-{i:02d}", "approval", NOW)
    for i in range(10):
        row = await stores.style.add_candidate(
            dirs.tenant, f"skill-{i:02d}", f"style bullet number {i}", Counts(3, 1), 0
        )
        await stores.style.update(row.id, 0, state="live" if i < 7 else "shadow")
    await stores.chats.set(dirs.tenant, "web", "c1", "audience", "a study group")
    await stores.chats.set(dirs.tenant, "web", "c1", "persona", "forge")


def make(
    settings: Settings,
    stores: Stores,
    dirs: TenantDirs,
    cached: bool,
    files: FileCache | None = None,
) -> Loadout:
    """The loadout as the daemon wires it: blocks 7-9 from roost.db and the tool files."""
    files = (files or FileCache()) if cached else NoCache()
    return build_loadout(
        settings,
        stores.chats,
        NullAudit(),
        skills=GradedSkills(stores.grades, files),
        style=LearnedStyle(stores.style),
        tools=SavedToolsView(ToolCatalog(files, lambda: int(NOW * 1000))),
        cached=cached,
        files=files,
    )


class Timed(list[float]):
    """Wall µs per call; `cpu`: this thread's CPU µs per call (less moved by other load)."""

    cpu: list[float]


async def measure(
    fn: Callable[[int], object], turns: int, before: Callable[[int], object] | None = None
) -> Timed:
    """`fn(i)` timed `turns` times (awaited when it returns an awaitable), each after
    `before(i)` (untimed; awaited likewise)."""
    out, cpu = Timed(), []
    for i in range(turns):
        if before is not None:
            done = before(i)
            if inspect.isawaitable(done):
                await done
        c, t = time.thread_time_ns(), time.perf_counter_ns()
        got = fn(i)
        if inspect.isawaitable(got):
            await got
        out.append((time.perf_counter_ns() - t) / 1000)
        cpu.append((time.thread_time_ns() - c) / 1000)
    out.cpu = cpu
    return out


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[int(q) - 1] if len(xs) > 1 else xs[0]


async def text_of(lo: Loadout, dirs: TenantDirs) -> str:
    await lo.prompt.prepare(dirs.tenant)
    return lo.prompt.render(dirs, "web", "c1", "m0", NOW).text


async def measure_loadout(
    settings: Settings,
    dirs: TenantDirs,
    lo: Loadout,
    plain: Callable[[int], Awaitable[Any]],
    how: str,
    turns: int,
    stores: Stores,
) -> list[tuple[str, list[float]]]:
    """The rows of one loadout (its file cache stat-checked or inotify-watched)."""

    def render(lo: Loadout) -> Callable[[int], Awaitable[Any]]:
        async def turn(i: int) -> Any:  # a turn: `prepare` (the observer), then the prompt
            await lo.prompt.prepare(dirs.tenant)
            return lo.prompt.render(dirs, "web", "c1", f"m{i}", NOW)

        return turn

    assert (await plain(0)).text == await text_of(lo, dirs)
    include = dirs.root / "steer" / "r7.md"

    def touch_one(i: int) -> None:
        include.write_text(f"Rule file 7, revision {i} of {how}: be precise.\n")

    async def session_row(i: int) -> None:  # what every turn writes to roost.db besides
        await stores.db.execute(
            "INSERT INTO session_messages (tenant, channel, chat, turn, role, content, at) "
            "VALUES ('alice', 'web', 'c1', ?, 'user', 'hello', ?)",
            (i, NOW),
        )

    grades = stores.grades

    async def grade_moves(i: int) -> None:  # what grading does after most turns
        signal = ("approval", "rephrase")[i % 2]
        await grades.apply(dirs.tenant, f"skill-{i % 50:02d}", signal, NOW)
        await asyncio.sleep(0)  # the watch takes the notify of the write (as between turns)

    for _ in range(50):  # warm up
        await render(lo)(0)
    unchanged = await measure(render(lo), turns)
    written = await measure(render(lo), turns // 2, before=session_row)
    changed = await measure(render(lo), turns // 4, before=touch_one)
    graded = await measure(render(lo), turns // 4, before=grade_moves)
    notes = MemoryNotes(lo.memory.store, settings.memory, lo.prompt.now_note, lo.files)

    async def with_notes(i: int) -> object:
        inbound = Inbound("web", "local", "c1", f"what was topic {i % 10:03d} about", "1")
        turn = TurnContext(dirs, inbound, lambda: NOW)
        return (await render(lo)(i), notes.note(turn))

    prov = Provenance("person", "web", "c1", "m")

    def touch_topic(i: int) -> None:
        body = f"body revision {i} " * 20
        lo.memory.store.save(dirs, "topic 007", "user", "summary of topic 7", body, prov, NOW)

    for i in range(20):  # warm; the ten messages' topics have their `injected` time
        await with_notes(i)
    injected = await measure(with_notes, turns // 2)
    topic_changed = await measure(with_notes, turns // 4, before=touch_topic)
    return [
        (f"{how}: unchanged (cached)", unchanged),
        (f"{how}: unchanged, a session row written", written),
        (f"{how}: one file changed", changed),
        (f"{how}: one skill grade moved", graded),
        (f"{how}: + recall injection, unchanged", injected),
        (f"{how}: + recall injection, topic changed", topic_changed),
    ]


def floor_of(changes: TableChanges, watch: DirWatch | None) -> Callable[[int], object]:
    """What no memo's proof can skip: one look at the inotify queue, and an await (a
    turn's `prepare` when nothing changed; the versions are in process)."""

    async def proof(i: int) -> object:
        await changes.prepare("nobody")
        return watch is None or watch.unchanged(())

    return proof


async def timing_rows_async(turns: int) -> tuple[int, bool, list[tuple[str, list[float]]]]:
    """Every row, the floor and the full re-read first, all from one run."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROOST_CONFIG"] = str(Path(tmp) / "roost.toml")
        (Path(tmp) / "roost.toml").write_text("")
        settings = load_settings(home=Path(tmp) / "home", loadout={"memory_chars": 20_000})
        settings.home.mkdir()
        db = await open_database(settings.home / "roost.db")
        stores = await Stores(db).loaded()
        stops = [watching(stores.chats), watching(stores.changes)]
        dirs = TenantDirs.of(settings.home, "alice").ensure()
        await asyncio.wait_for(stores.changes.subscribed(), 30)  # mirrors kept from here on
        cached = make(settings, stores, dirs, True)
        await populate(settings, cached, dirs, stores)
        fresh = await Stores(db).loaded()  # unwatched: every `prepare` reads
        plain = make(settings, fresh, dirs, False)
        watch = DirWatch.open((str(settings.home), str(persona_dirs(settings)[0])))
        watched = make(settings, stores, dirs, True, FileCache(watch=watch))

        async def from_scratch(i: int) -> Any:
            await fresh.changes.prepare(dirs.tenant)
            return plain.prompt.render(dirs, "web", "c1", f"m{i}", NOW)

        rows: list[tuple[str, list[float]]] = [
            (
                "floor: the proof (inotify look + an await)",
                await measure(floor_of(stores.changes, watch), turns),
            ),
            ("full re-read + re-render (no cache)", await measure(from_scratch, turns // 4)),
        ]
        for how, lo in (("inotify-watched", watched), ("stat-checked", cached)):
            rows += await measure_loadout(settings, dirs, lo, from_scratch, how, turns, stores)
        if watch is not None:
            watch.close()
        size = len(await text_of(cached, dirs))
        for stop in stops:
            await stop()
        await db.aclose()
    return size, watch is not None, rows


def timing_rows(turns: int) -> tuple[int, bool, list[tuple[str, list[float]]]]:
    return asyncio.run(timing_rows_async(turns))


def print_rows(size: int, watched: bool, rows: list[tuple[str, list[float]]]) -> None:
    print(f"prompt: {size:,} characters" + ("" if watched else "; no inotify here"))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    floor = pct(rows[0][1], 50)
    re_read = pct(rows[1][1], 50)
    print(f"{'':48s} {'p50 µs':>9} {'p99 µs':>9} {'CPU p50':>9} {'/floor':>8} {'re-read/':>9}")
    for name, xs in rows:
        cpu = pct(xs.cpu, 50) if isinstance(xs, Timed) else float("nan")
        p50 = pct(xs, 50)
        print(
            f"{name:48s} {p50:9.1f} {pct(xs, 99):9.1f} {cpu:9.1f} "
            f"{p50 / floor:7.1f}x {re_read / p50:8.1f}x"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="200 turns: seconds, same table")
    args = ap.parse_args()
    if args.quick:
        args.turns = 200
    print_rows(*timing_rows(args.turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())

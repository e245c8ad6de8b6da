"""Prompt benchmark: per-turn snapshot + nine-block assembly with a large loadout.

Loadout: 200 memory topics, a steering tree of 40 includes (20 operator, 20
tenant), 50 personal tools, 10 style bullets, 50 graded skills, profile,
vault, persona and audience. Measures p50/p99 of `LoadoutPrompt.render`
(what `TurnRunner` calls once per turn) when nothing changed, right after
one file changed, and with no caching at all (every file re-read and every
block re-rendered each turn), all in the same run. The same again with the
memory injection a turn adds (`MemoryNotes.note`: the Now note and the topics
that match the message, scored against all 200 topics), unchanged and right
after one topic was rewritten. Each of these twice: through the stat-checked
file cache, and through the cache the daemon uses, watched by inotify
(`bridge.core.dirwatch`: an unchanged file costs no `stat`). Prints wall and
this thread's CPU per render (p50; CPU is less moved by other load), the load
average, and ratios.

Run: .venv/bin/python bench/prompt.py [--turns 2000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bridge.app.loadout import Loadout, build_loadout, persona_dirs
from bridge.app.memory_notes import MemoryNotes
from bridge.core.config import Settings, load_settings
from bridge.core.db import connect
from bridge.core.dirwatch import DirWatch
from bridge.core.filecache import FileCache
from bridge.memory.store import Provenance
from bridge.prompt.views import FileSkills, StaticStyle
from bridge.types.audit_sink import NullAudit
from bridge.types.messages import Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext
from forge import toolmeta
from forge.toolmeta import ToolMeta

NOW = 1_800_000_000.0


def populate(settings: Settings, lo: Loadout, dirs: TenantDirs) -> None:
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
    lo.chats.set(dirs.tenant, "web", "c1", "audience", "a study group")  # type: ignore[union-attr]
    lo.chats.set(dirs.tenant, "web", "c1", "persona", "forge")  # type: ignore[union-attr]


def make(
    settings: Settings,
    db: sqlite3.Connection,
    dirs: TenantDirs,
    cached: bool,
    files: FileCache | None = None,
) -> Loadout:
    grades = {f"skill-{i:02d}": 0.5 + i / 100 for i in range(50)}
    bullets = [
        (f"b{i}", f"style bullet number {i}", "live" if i < 7 else "shadow") for i in range(10)
    ]
    return build_loadout(
        settings,
        db,
        NullAudit(),
        skills=FileSkills(lambda dirs: grades),
        style=StaticStyle(lambda dirs: bullets),
        cached=cached,
        files=files,
    )


class Timed(list[float]):
    """Wall µs per call; `cpu`: this thread's CPU µs per call (less moved by other load)."""

    cpu: list[float]


def measure(
    fn: Callable[[int], object], turns: int, before: Callable[[int], None] | None = None
) -> Timed:
    out, cpu = Timed(), []
    for i in range(turns):
        if before is not None:
            before(i)
        c, t = time.thread_time_ns(), time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t) / 1000)
        cpu.append((time.thread_time_ns() - c) / 1000)
    out.cpu = cpu
    return out


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[int(q) - 1] if len(xs) > 1 else xs[0]


def text_of(lo: Loadout, dirs: TenantDirs) -> str:
    return lo.prompt.render(dirs, "web", "c1", "m0", NOW).text


def measure_loadout(
    settings: Settings,
    dirs: TenantDirs,
    lo: Loadout,
    plain: Loadout,
    how: str,
    turns: int,
) -> list[tuple[str, list[float]]]:
    """The rows of one loadout (its file cache stat-checked or inotify-watched)."""

    def render(lo: Loadout) -> Callable[[int], object]:
        return lambda i: lo.prompt.render(dirs, "web", "c1", f"m{i}", NOW)

    assert text_of(plain, dirs) == text_of(lo, dirs)
    include = dirs.root / "steer" / "r7.md"

    def touch_one(i: int) -> None:
        include.write_text(f"Rule file 7, revision {i} of {how}: be precise.\n")

    for _ in range(50):  # warm up
        render(lo)(0)
    unchanged = measure(render(lo), turns)
    changed = measure(render(lo), turns // 4, before=touch_one)
    notes = MemoryNotes(lo.memory.store, settings.memory, lo.prompt.now_note, lo.files)

    def with_notes(i: int) -> object:
        inbound = Inbound("web", "local", "c1", f"what was topic {i % 10:03d} about", "1")
        turn = TurnContext(dirs, inbound, lambda: NOW)
        return (render(lo)(i), notes.note(turn))

    prov = Provenance("person", "web", "c1", "m")

    def touch_topic(i: int) -> None:
        body = f"body revision {i} " * 20
        lo.memory.store.save(dirs, "topic 007", "user", "summary of topic 7", body, prov, NOW)

    for i in range(20):  # warm; the ten messages' topics have their `injected` time
        with_notes(i)
    injected = measure(with_notes, turns // 2)
    topic_changed = measure(with_notes, turns // 4, before=touch_topic)
    rows = [
        (f"{how}: unchanged", unchanged),
        (f"{how}: one file changed", changed),
        (f"{how}: + memory injection, unchanged", injected),
        (f"{how}: + memory injection, topic changed", topic_changed),
    ]
    if how == "stat-checked":
        rows.append(("re-read + re-render everything", measure(render(plain), turns // 4)))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="200 turns: seconds, same table")
    args = ap.parse_args()
    if args.quick:
        args.turns = 200
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ROOST_CONFIG"] = str(Path(tmp) / "roost.toml")
        (Path(tmp) / "roost.toml").write_text("")
        settings = load_settings(home=Path(tmp) / "home", loadout={"memory_chars": 20_000})
        settings.home.mkdir()
        db = connect(settings.home / "roost.db")
        dirs = TenantDirs.of(settings.home, "alice").ensure()
        cached = make(settings, db, dirs, True)
        populate(settings, cached, dirs)
        plain = make(settings, db, dirs, False)
        watch = DirWatch.open((str(settings.home), str(persona_dirs(settings)[0])))
        watched = make(settings, db, dirs, True, FileCache(watch=watch))
        rows = []
        for how, lo in (("stat-checked", cached), ("inotify-watched", watched)):
            rows += measure_loadout(settings, dirs, lo, plain, how, args.turns)
        if watch is not None:
            watch.close()
        size = len(text_of(cached, dirs))
        db.close()
    print(f"prompt: {size:,} characters" + ("; no inotify here" if watch is None else ""))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, xs in rows:
        cpu = pct(xs.cpu, 50) if isinstance(xs, Timed) else float("nan")
        print(
            f"{name:46s} p50 {pct(xs, 50):8.1f} µs  p99 {pct(xs, 99):8.1f} µs  "
            f"CPU p50 {cpu:8.1f} µs  n={len(xs)}"
        )
    by = dict(rows)
    for how in ("stat-checked", "inotify-watched"):
        re_read = pct(by["re-read + re-render everything"], 50)
        for what in ("unchanged", "one file changed"):
            ratio = re_read / pct(by[f"{how}: {what}"], 50)
            print(f"{how}: ratio re-read / {what} (p50): {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Prompt benchmark: per-turn snapshot + nine-block assembly with a large loadout.

Loadout: 200 memory topics, a steering tree of 40 includes (20 operator, 20
tenant), 50 personal tools, 10 style bullets, 50 graded skills, profile,
vault, persona and audience. Measures p50/p99 of `LoadoutPrompt.render`
(what `TurnRunner` calls once per turn) when nothing changed, right after
one file changed, and with no caching at all (every file re-read and every
block re-rendered each turn), all in the same run. The same again with the
memory injection a turn adds (`MemoryNotes.note`: the Now note and the topics
that match the message, scored against all 200 topics), unchanged and right
after one topic was rewritten. Prints ratios.

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

from bridge.app.loadout import Loadout, build_loadout
from bridge.app.memory_notes import MemoryNotes
from bridge.core.config import Settings, load_settings
from bridge.core.db import connect
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


def make(settings: Settings, db: sqlite3.Connection, dirs: TenantDirs, cached: bool) -> Loadout:
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
    )


def measure(
    fn: Callable[[int], object], turns: int, before: Callable[[int], None] | None = None
) -> list[float]:
    out = []
    for i in range(turns):
        if before is not None:
            before(i)
        t = time.perf_counter_ns()
        fn(i)
        out.append((time.perf_counter_ns() - t) / 1000)
    return out


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[int(q) - 1] if len(xs) > 1 else xs[0]


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

        def render(lo: Loadout) -> Callable[[int], object]:
            return lambda i: lo.prompt.render(dirs, "web", "c1", f"m{i}", NOW)

        text = render(cached)(0)
        assert render(plain)(0).text == text.text  # type: ignore[attr-defined]
        blocks = [(b.name, len(b.text)) for b in text.blocks]  # type: ignore[attr-defined]
        include = dirs.root / "steer" / "r7.md"

        def touch_one(i: int) -> None:
            include.write_text(f"Rule file 7, revision {i}: be precise.\n")

        for _ in range(50):  # warm up
            render(cached)(0)
        unchanged = measure(render(cached), args.turns)
        changed = measure(render(cached), args.turns // 4, before=touch_one)
        reread = measure(render(plain), args.turns // 4)
        notes = MemoryNotes(cached.memory.store, settings.memory, cached.prompt.now_note)

        def with_notes(i: int) -> object:
            inbound = Inbound("web", "local", "c1", f"what was topic {i % 10:03d} about", "1")
            turn = TurnContext(dirs, inbound, lambda: NOW)
            return (render(cached)(i), notes.note(turn))

        prov = Provenance("person", "web", "c1", "m")

        def touch_topic(i: int) -> None:
            body = f"body revision {i} " * 20
            cached.memory.store.save(
                dirs, "topic 007", "user", "summary of topic 7", body, prov, NOW
            )

        for i in range(20):  # warm; the ten messages' topics have their `injected` time
            with_notes(i)
        injected = measure(with_notes, args.turns // 2)
        topic_changed = measure(with_notes, args.turns // 4, before=touch_topic)
        db.close()
    print(
        f"prompt: {len(text.text):,} characters in {len(blocks)} blocks: "  # type: ignore[attr-defined]
        + ", ".join(f"{n} {c:,}" for n, c in blocks)
    )
    rows = (
        ("unchanged (cached)", unchanged),
        ("one file changed", changed),
        ("re-read + re-render everything", reread),
        ("+ memory injection, unchanged", injected),
        ("+ memory injection, topic changed", topic_changed),
    )
    for name, xs in rows:
        print(f"{name:32s} p50 {pct(xs, 50):9.1f} µs   p99 {pct(xs, 99):9.1f} µs   n={len(xs)}")
    print(f"ratio re-read / unchanged (p50): {pct(reread, 50) / pct(unchanged, 50):.1f}x")
    print(f"ratio re-read / one changed (p50): {pct(reread, 50) / pct(changed, 50):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

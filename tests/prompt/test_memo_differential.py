"""The memoized prompt against a from-scratch assembly, after every one of many random edits.

A real home, a real roost.db and a real inotify watch, wired as the daemon wires
them (production views of blocks 7-9 over the database and the watched file
cache). Each step makes one random change to an input of any kind — steering
files and their @includes (edited in place at the same size, replaced, deleted,
renamed, reached through a symbolic link that is moved, hard-linked), the
profile, memory topics and the index edited by hand, vault files, persona
files and the chat's persona, the audience, skill files and grades, style
bullets, saved tools and their usage, writes by another connection (another
process: a chat setting, a grade, a style bullet), the clock — then renders the
prompt of a random chat and message three ways: memoized over the
inotify-watched cache, memoized over the stat-checked cache (both over the one
set of stores with their mirrors, as the daemon wires them), and from scratch
(nothing cached, every view and store new). All three must be byte-identical,
with the same stable prefix, and the memory injection of the turn must equal a
fresh one. No waiting for files: the kernel queues an inotify event before the
change returns; another connection's write is waited for (its notify reaching
the mirrors), as a turn after it would find it.
"""

from __future__ import annotations

import inspect
import os
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

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
from bridge.skills.grades import SIGNALS, SkillGrades
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
from tests.waits import until

pytestmark = pytest.mark.skipif(
    DirWatch.open((os.getcwd(),)) is None, reason="no inotify on a local file system here"
)

DAY = 86_400.0
START = 1_800_000_000.0
CHATS = (("web", "c1"), ("web", "c2"), ("telegram", "t1"), ("web", None))


class Stores:
    """The stores the prompt reads, sharing one `TableChanges` (as `bridge.app.wiring`)."""

    def __init__(self, db: Database) -> None:
        self.changes = TableChanges(db)
        self.chats = ChatSettings(db, self.changes)
        self.grades = SkillGrades(db, self.changes)
        self.style = StyleStore(db, self.changes)

    async def loaded(self) -> Stores:
        await self.chats.load()
        await self.changes.prepare("alice")
        return self


def views(stores: Stores, files: FileCache, clock: Callable[[], float]) -> dict[str, object]:
    return {
        "skills": GradedSkills(stores.grades, files),
        "style": LearnedStyle(stores.style),
        "tools": SavedToolsView(ToolCatalog(files, lambda: int(clock() * 1000))),
    }


class World:
    """One tenant's inputs and three ways of assembling its prompt."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = START
        os.environ["ROOST_CONFIG"] = str(root / "roost.toml")
        (root / "roost.toml").write_text("")
        self.settings: Settings = load_settings(home=root / "home")
        self.home = self.settings.home
        self.home.mkdir()
        self.dirs = TenantDirs.of(self.home, "alice").ensure()
        (self.home / "personas").mkdir()
        self.dirs.user_md.write_text("- start: here\n")
        (self.dirs.root / "mine").mkdir()
        os.link(self.dirs.user_md, self.dirs.root / "mine" / "profile-copy.md")
        watch = DirWatch.open((str(self.home), str(persona_dirs(self.settings)[0])))
        assert watch is not None
        self.watch = watch
        self.prov = Provenance("person", "web", "c1", "m")
        self._stops: list[Callable[[], object]] = []

    async def open(self) -> World:
        """The daemon's database and stores (watched: another connection's notify reaches
        them), the two memoized loadouts over them, and another process's connection."""
        self.db = await open_database(self.home / "roost.db")
        self.stores = await Stores(self.db).loaded()
        self._stops += [watching(self.stores.chats), watching(self.stores.changes)]
        self.watched = self._loadout(self.stores, FileCache(watch=self.watch))
        self.checked = self._loadout(self.stores, FileCache())
        self.notes = MemoryNotes(
            self.watched.memory.store,
            self.settings.memory,
            self.watched.prompt.now_note,
            self.watched.files,
        )
        self.other_db = await open_database(self.home / "roost.db")
        self.other = await Stores(self.other_db).loaded()
        return self

    def _loadout(self, stores: Stores, files: FileCache, cached: bool = True) -> Loadout:
        return build_loadout(
            self.settings,
            stores.chats,
            NullAudit(),
            files=files,
            cached=cached,
            **views(stores, files, lambda: self.now),  # type: ignore[arg-type]
        )

    async def close(self) -> None:
        for stop in self._stops:
            await stop()  # type: ignore[misc]
        await self.other_db.aclose()
        await self.db.aclose()
        self.watch.close()

    # -- the check -------------------------------------------------------------------------

    async def check(self, step: int, what: str) -> None:
        channel, chat = self.rng.choice(CHATS)
        msg_id = f"m{self.rng.randrange(1000)}"
        fresh = self._loadout(await Stores(self.db).loaded(), NoCache(), cached=False)
        want = fresh.prompt.render(self.dirs, channel, chat, msg_id, self.now)
        await self.watched.prompt.prepare("alice")  # a turn's `PromptRows` (one for both:
        await self.checked.prompt.prepare("alice")  # they share the stores)
        for how, lo in (("watched", self.watched), ("stat-checked", self.checked)):
            got = lo.prompt.render(self.dirs, channel, chat, msg_id, self.now)
            assert got.text == want.text, f"step {step} ({what}): {how} prompt differs"
            assert got.stable_chars == want.stable_chars, f"step {step} ({what}): {how}"
        text = f"what about topic {self.rng.randrange(12)} and {self.rng.choice(WORDS)}"
        turn = TurnContext(
            self.dirs, Inbound(channel, "local", chat or "", text, msg_id), self.now_
        )
        # the injection: as `explain` (every topic read afresh and scored in full) picks
        again = MemoryNotes(self.watched.memory.store, self.settings.memory)
        want_note = "\n\n".join(
            p for p in (fresh.prompt.now_note(turn), again.explain(self.dirs, text).note) if p
        )
        assert self.notes.note(turn) == want_note, f"step {step} ({what}): injection"

    async def noticed(self, write: Callable[[], object]) -> None:
        """Another connection's write, then its notify arriving at the daemon's stores."""
        generation = self.stores.changes.generation
        result = write()
        if inspect.isawaitable(result):
            await result
        await until(lambda: self.stores.changes.generation > generation, "the notify")

    def now_(self) -> float:
        return self.now

    # -- the edits -------------------------------------------------------------------------

    def text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randrange(1, 12)))

    def pick(self, directory: Path, pattern: str = "*") -> Path | None:
        found = sorted(p for p in directory.glob(pattern) if p.is_file() or p.is_symlink())
        return self.rng.choice(found) if found else None

    def write(self, path: Path, text: str) -> None:
        """In place half of the time (same inode), else the atomic replace roost does."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and not path.is_symlink() and self.rng.random() < 0.5:
            with open(path, "r+", encoding="utf-8") as fh:
                old = fh.read()
                fh.seek(0)
                fh.truncate()
                if path.suffix == ".md":  # the same size: only the mtime and the event tell
                    text = text[: len(old)].ljust(len(old), "x")
                fh.write(text)
            return
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def steering_top(self) -> str:
        home_or_tenant = self.rng.random() < 0.5
        top = self.home / "STEERING.md" if home_or_tenant else self.dirs.steering
        base = "steer" if home_or_tenant else "mine"
        refs = " ".join(f"@{base}/r{i}.md" for i in self.rng.sample(range(6), 3))
        self.write(top, f"Rules {self.text()}. Also follow {refs} and @{base}/link.md.\n")
        return "top"

    def steering_include(self) -> str:
        base = self.rng.choice((self.home / "steer", self.dirs.root / "mine"))
        path = base / f"r{self.rng.randrange(6)}.md"
        roll = self.rng.random()
        if roll < 0.6:
            self.write(path, f"include {self.text()}\n")
            return "include written"
        if roll < 0.8:
            path.unlink(missing_ok=True)
            return "include deleted"
        other = base / f"r{self.rng.randrange(6)}.md"
        if path.exists():
            os.replace(path, other)
        return "include renamed"

    def steering_link(self) -> str:
        """`link.md` is a symbolic link, moved between includes (and into the vault)."""
        base = self.rng.choice((self.home / "steer", self.dirs.root / "mine"))
        base.mkdir(exist_ok=True)
        link = base / "link.md"
        target = self.rng.choice(
            (f"r{self.rng.randrange(6)}.md", "missing.md", str(self.dirs.vault / "TOKEN"))
        )
        tmp = base / ".link.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        os.replace(tmp, link)
        return "link moved"

    def hard_link(self) -> str:
        """USER.md written through another hard link (made before the first prompt: a link
        made later to a file already vouched for is not seen, see FileCache)."""
        other = self.dirs.root / "mine" / "profile-copy.md"
        if not other.exists() or os.stat(other).st_ino != os.stat(self.dirs.user_md).st_ino:
            return "hard link gone (USER.md replaced)"
        with open(other, "a", encoding="utf-8") as fh:
            fh.write(f"- via link: {self.text()}\n")
        return "written through a hard link"

    def profile(self) -> str:
        lines = "".join(f"- k{i}: {self.text()}\n" for i in range(self.rng.randrange(0, 5)))
        self.write(self.dirs.user_md, lines)
        return "profile"

    def memory(self) -> str:
        store = self.watched.memory.store
        name = f"topic {self.rng.randrange(12)}"
        roll = self.rng.random()
        if roll < 0.6:
            store.save(
                self.dirs,
                name,
                "user",
                f"about {self.text()}"[:140],
                self.text(),
                self.prov,
                self.now,
            )
            return "memory saved"
        if roll < 0.8:
            store.delete(self.dirs, name, self.now)
            return "memory deleted"
        index = self.dirs.memory / "MEMORY.md"
        if index.exists():
            self.write(index, index.read_text() + f"- [hand](x.md) — {self.text()}\n")
        return "index edited by hand"

    def vault(self) -> str:
        name = f"SECRET_{self.rng.randrange(4)}"
        path = self.dirs.vault / name
        if path.exists() and self.rng.random() < 0.5:
            path.unlink()
            return "secret removed"
        path.write_text(f"value-{self.rng.randrange(10**6):06d}-long-enough")
        return "secret added"

    def persona_file(self) -> str:
        name = self.rng.choice(("mine", "concise"))  # "concise" replaces the shipped one
        path = self.home / "personas" / f"{name}.json"
        if path.exists() and self.rng.random() < 0.3:
            path.unlink()
            return "persona file removed"
        body = f'"description": "d", "append_system": "## {name}: {self.text()}"'
        self.write(path, f'{{"name": "{name}", {body}}}')
        return "persona file written"

    async def chat_setting(self) -> str:
        chats = self.stores.chats
        channel, chat = self.rng.choice(CHATS[:3])
        key = self.rng.choice(("persona", "audience"))
        if self.rng.random() < 0.3:
            await chats.clear("alice", channel, chat, key)
            return f"{key} cleared"
        value = (
            self.rng.choice(("mine", "concise", "forge", "nobody"))
            if key == "persona"
            else self.text()
        )
        await chats.set("alice", channel, chat, key, value)
        return f"{key} set"

    async def other_connection(self) -> str:
        """Another process's write (a `roost` command, another instance): a chat setting,
        a grade or a style bullet's state, seen once its notify arrived."""
        roll = self.rng.random()
        if roll < 0.4:
            channel, chat = self.rng.choice(CHATS[:3])
            value = f"elsewhere {self.text()}"
            await self.other.chats.set("alice", channel, chat, "audience", value)
            mine = self.stores.chats
            await until(lambda: mine.get("alice", channel, chat, "audience") == value, "it")
            return "other connection: audience"
        if roll < 0.7:
            name, signal = f"s{self.rng.randrange(5)}", self.rng.choice(SIGNALS)
            await self.noticed(lambda: self.other.grades.apply("alice", name, signal, self.now))
            return "other connection: grade"
        rows = await self.other.style.tenant("alice")
        if not rows:
            return "other connection: no bullet"
        row, state = self.rng.choice(rows), self.rng.choice(("live", "shadow", "pending"))
        now_ms = int(self.now * 1000)
        await self.noticed(lambda: self.other.style.update(row.id, now_ms, state=state))
        return f"other connection: bullet {state}"

    async def skill(self) -> str:
        name = f"s{self.rng.randrange(5)}"
        path = self.dirs.skills / f"{name}.md"
        roll = self.rng.random()
        if roll < 0.4:
            self.write(path, f"---\nname: {name}\ndescription: {self.text()}\n---\nbody\n")
            return "skill written"
        if roll < 0.5:
            path.unlink(missing_ok=True)
            return "skill removed"
        signal = self.rng.choice(SIGNALS)
        await self.stores.grades.apply("alice", name, signal, self.now)
        return "grade moved"

    async def style(self) -> str:
        store = self.stores.style
        rows = await store.tenant("alice")
        now_ms = int(self.now * 1000)
        if not rows or self.rng.random() < 0.3:
            await store.add_candidate("alice", "s0", self.text(), Counts(3, 1), now_ms)
            return "bullet added"
        row = self.rng.choice(rows)
        if self.rng.random() < 0.3:
            await store.update(row.id, now_ms, text=self.text())
            return "bullet text"
        state = self.rng.choice(("live", "shadow", "pending", "retired"))
        await store.update(row.id, now_ms, state=state)
        return f"bullet {state}"

    def tool(self) -> str:
        name = f"tool_{self.rng.randrange(5)}"
        path = self.dirs.tools / f"me.{name}.json"
        roll = self.rng.random()
        if roll < 0.4:
            created = int((self.now - self.rng.randrange(200) * DAY) * 1000)
            meta = ToolMeta(name, self.text(), {}, (), "0" * 64, created)
            self.write(path, toolmeta.dumps(meta).decode())
            return "tool saved"
        if roll < 0.5:
            path.unlink(missing_ok=True)
            return "tool removed"
        if roll < 0.55:
            self.write(path, "{not json")
            return "tool broken"
        UsageStore(self.dirs.tools).record(name, True, int(self.now * 1000))
        return "tool used"

    def clock(self) -> str:
        self.now += self.rng.choice((1.0, 59.0, 3600.0, DAY, 30 * DAY, 91 * DAY))
        return "time passes"


WORDS = ("alpha", "beta", "gamma", "topic", "delta", "über", "née", "x" * 30, "1", "—")
EDITS = (
    World.steering_top,
    World.steering_include,
    World.steering_link,
    World.hard_link,
    World.profile,
    World.memory,
    World.vault,
    World.persona_file,
    World.chat_setting,
    World.other_connection,
    World.skill,
    World.style,
    World.tool,
    World.clock,
)


def made(tmp_path: Path, seed: int) -> World:
    return World(Path(os.path.realpath(tmp_path)), seed)


@pytest.fixture
async def world(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    w = await made(tmp_path, request.param).open()
    yield w
    await w.close()


async def edit(world: World) -> str:
    """One random edit (the file ones are synchronous, the database ones awaited)."""
    what = world.rng.choice(EDITS)(world)
    return str(await what) if inspect.isawaitable(what) else str(what)


@pytest.mark.parametrize("world", [1, 2, 3, 4], indirect=True)
async def test_the_memo_equals_a_fresh_assembly_after_every_random_edit(world: World) -> None:
    await world.check(0, "start")
    for step in range(1, 160):
        what = await edit(world)
        await world.check(step, what)
        if world.rng.random() < 0.3:  # the same again, unchanged: the kept prompt
            await world.check(step, f"{what}, then nothing")


@pytest.mark.parametrize("world", [5, 6], indirect=True)
async def test_a_topic_saved_renders_as_a_cold_assembly(world: World) -> None:
    """Topic after topic saved (the body alone, or the description too: block 3 moves),
    each prompt and injection right after the save against a cold one (the kept topic
    terms and their index put right for the one topic, `NoteIndex.changed`)."""
    store = world.watched.memory.store
    await world.check(0, "start")
    for step in range(1, 60):
        name = f"topic {world.rng.randrange(12)}"
        topic = store.find(world.dirs, name) if world.rng.random() < 0.5 else None
        about = topic.description if topic is not None else f"about {world.text()}"[:140]
        store.save(world.dirs, name, "user", about, world.text(), world.prov, world.now)
        await world.check(step, "topic saved")

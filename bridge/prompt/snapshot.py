"""The frozen snapshot of a tenant's loadout for one turn, and the taker that builds it.

A `Snapshot` holds everything the nine blocks render, as plain strings and
tuples, so blocks are pure functions of it and two snapshots compare equal
exactly when the prompt would be the same. `SnapshotTaker.take` builds it
from parts (`bridge.prompt.memo`), one per input: steering, profile, memory
index, vault names, the chat's settings, the persona, skills, style bullets,
personal tools. Each part is kept, per chat, while its proof holds: the files
it read unchanged (inotify generations, else `stat`) and its token equal (the
versions of the tenant's rows of the tables it read, as their stores mirror
them in process, `TableChanges`; the persona directories). The rows are read
from those mirrors, never from the database: `prepare(tenant)`, awaited
before the turn's prompt, reads again what another process changed. When
nothing changed, a turn costs one look at the watch, a version per table
and, per shown shadow bullet, its cohort bit, and returns the very same
`Snapshot` object without asking any part (`_kept`); a part whose proof failed is
computed again alone. Views that declare nothing (`views.declared`) are asked
on every turn. The time enters twice: the tools' "(unused Nd)" labels, kept
until the next day one of them moves, and the Now note, which is not in the
snapshot at all (`bridge.prompt.now`).
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import is_
from pathlib import Path
from typing import Any, NamedTuple

from bridge.core.filecache import FileCache, StatKey, sig
from bridge.loadout import vault
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.db_changes import TableChanges
from bridge.loadout.personas import DEFAULT, Personas
from bridge.loadout.profile import body_lines
from bridge.loadout.steering import (
    Confinement,
    SteeringCache,
    operator_confinement,
    tenant_confinement,
)
from bridge.memory.files import (
    INDEX_NAME,
    index_behind,
    index_entries,
    index_files,
    parse_filename,
)
from bridge.prompt.base import base_prompt
from bridge.prompt.memo import Keeper, Parts
from bridge.prompt.now import now_note
from bridge.prompt.views import (
    BulletRow,
    PersonalToolsView,
    SkillRow,
    SkillsView,
    StyleView,
    ToolRow,
    declared,
    shadow_cohort,
)
from bridge.schedule.service import host_zone
from bridge.schedule.zone import person_zone
from bridge.types.tenant_dirs import TenantDirs

DAY = 86_400.0
UNUSED_DAYS = 90


class ShownBullet(NamedTuple):
    bid: str
    text: str


class ToolLine(NamedTuple):
    """A personal tool as block 9 shows it."""

    name: str
    description: str
    unused_days: int | None  # set once it has been idle UNUSED_DAYS or more
    since: float  # last use, else creation (epoch seconds): the recency order


@dataclass(frozen=True, slots=True)
class Snapshot:
    tenant: str
    channel: str
    base: str
    operator_steering: str
    tenant_steering: str
    profile: tuple[str, ...]
    memory: tuple[str, ...]  # index entry lines
    memory_cap: int
    vault_names: tuple[str, ...]
    persona: str
    persona_system: str
    audience: str
    skills: tuple[SkillRow, ...]
    bullets: tuple[ShownBullet, ...]  # shown this turn
    tools: tuple[ToolLine, ...]
    shadow_on: bool = field(default=False, compare=False)  # a shadow bullet is shown


@dataclass(slots=True)
class _Chat:
    """One chat's parts (its settings, its persona; the tenant's own parts are shared by
    its chats) and what was made of them all: the tool lines (valid in a window of time)
    and the snapshots by the shadow bullets shown."""

    parts: Parts = field(default_factory=Parts)
    lines: tuple[object, float, float, tuple[ToolLine, ...]] | None = None  # rows, from, until
    made: tuple[object, ...] = ()  # the values the snapshots below were made of
    snapshots: dict[tuple[str, ...], Snapshot] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _TenantPaths:
    steering: Path
    profile: Path
    memory_index: Path
    conf: Confinement


class SnapshotTaker:
    def __init__(
        self,
        *,
        home: Path,
        memory_cap: int,
        steering_cap: int,
        chat_settings: ChatSettings | None,
        personas: Personas,
        skills: SkillsView,
        style: StyleView,
        tools: PersonalToolsView,
        audience_defaults: Mapping[str, str] | None = None,
        files: FileCache | None = None,
        cached: bool = True,
        default_tz: str | None = None,
        styles: Mapping[str, str] | None = None,
        changes: TableChanges | None = None,
        remember: int = 512,
        refresh_memory: Callable[[TenantDirs], None] | None = None,
    ) -> None:
        """`changes`: the versions of the prompt rows `chat_settings` and every view's
        declared tables keep in their mirrors (None: those parts are read every turn).
        `refresh_memory`: writes a tenant's MEMORY.md again from its topic files (the
        memory store's `rebuild_index`), called when a topic file changed by hand
        since (None: the index is taken as it is)."""
        self._refresh_memory = refresh_memory
        # memory folder -> (its watch generation, topic file -> mtime ns) at the last look
        self._topics_seen: dict[str, tuple[int, dict[str, int]]] = {}
        self._styles = dict(styles or {})  # channel -> block 1's line (platform declarations)
        self.home = home
        self.default_tz = default_tz or host_zone()  # [schedule] timezone, else the host
        self.memory_cap = memory_cap
        self.files = files or FileCache()
        self._steering = SteeringCache(self.files, steering_cap, enabled=cached)
        self._chat = chat_settings
        self._personas = personas
        self._skills = skills
        self._style = style
        self._tools = tools
        self._audience = dict(audience_defaults or {})
        self._derived: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        self._op_conf = operator_confinement(home)
        self._op_steering = home / "STEERING.md"
        self._tenants: dict[str, _TenantPaths] = {}
        self._changes = changes
        self._cached = cached
        self._keeper = Keeper(self.files)
        self._chats: OrderedDict[tuple[str, str, str], _Chat] = OrderedDict()
        self._tenant_parts: OrderedDict[str, Parts] = OrderedDict()  # by tenant root
        self._remember = remember
        self._bases: dict[str, str] = {}
        self._zones: dict[str, tuple[tuple[str, ...], str]] = {}  # tenant -> (profile, zone)
        # what vouches for each view's part, by its declaration (made once: a view's
        # `tables` and `files` are its own for its life): its tables, () when it reads
        # none, None when nothing vouches (`_view_token`)
        self._vouch = tuple(self._vouching(v) for v in (skills, style, tools))

    def _lines(self, path: Path, fn: Callable[[str], list[str]]) -> tuple[str, ...]:
        """fn(text of path), remembered while the text is the same (the same object, or
        equal: a file written again with the same bytes keeps its tuple, so the snapshot
        built from it is kept too)."""
        text = self.files.read(path) or ""
        key = (str(path), fn.__name__)
        hit = self._derived.get(key)
        if hit is not None and (hit[0] is text or hit[0] == text):
            return hit[1]
        out = tuple(fn(text))
        self._derived[key] = (text, out)
        return out

    def _memory(self, dirs: TenantDirs, index: Path) -> tuple[str, ...]:
        """The memory index's entries. A topic file edited, added or removed by hand
        since MEMORY.md was written has the index rebuilt first (`refresh_memory`), so
        the model sees what the person wrote: the part depends on every event in the
        memory folder (an edit in place names no new entry), and `_topic_times` looks
        at the topic files those events named."""
        if self._refresh_memory is not None:
            files, folder = self.files, dirs.memory
            files.depend_on(folder)
            topics = self._topic_times(folder)
            named = self._lines(index, index_files)  # kept while the text is the same
            if index_behind(named, _mtime(files.stat_key(index)), topics):
                self._refresh_memory(dirs)
                # read past the cache: inside a batch it looked at the watch once, before
                # this write (the write's event moves the part's proof for the next turn)
                try:
                    return tuple(index_entries(index.read_text(encoding="utf-8")))
                except OSError:
                    return ()
        return self._lines(index, index_entries)

    def _topic_times(self, folder: Path) -> dict[str, int]:
        """Each topic file's modification time (ns). With the watch, only the names its
        events named since the last look are asked again (a save writes one topic among
        a hundred); without it, or when that is not known, the folder is read whole."""
        key, watch = str(folder), self.files.watch
        gen = watch.generation(key) if watch is not None else None  # before the look
        last = self._topics_seen.get(key)
        named = None
        if watch is not None and gen is not None and last is not None:
            named = watch.named_since(key, last[0])
        if last is None or named is None:
            times = _topic_times(folder)
        else:
            times = dict(last[1])
            for name in named:
                if parse_filename(name) is not None:
                    found = _mtime(sig(folder / name))
                    if found is None:
                        times.pop(name, None)
                    else:
                        times[name] = found
        if gen is not None:
            if len(self._topics_seen) >= 4096:
                self._topics_seen.clear()
            self._topics_seen[key] = (gen, times)
        return times

    def _paths(self, dirs: TenantDirs) -> _TenantPaths:
        """The tenant's file paths and confinement, worked out once per tenant directory.

        Only names are kept here: every turn still stats each file.
        """
        key = str(dirs.root)
        paths = self._tenants.get(key)
        if paths is None:
            paths = self._tenants[key] = _TenantPaths(
                steering=dirs.steering,
                profile=dirs.user_md,
                memory_index=dirs.memory / INDEX_NAME,
                conf=tenant_confinement(dirs),
            )
        return paths

    def zone(self, dirs: TenantDirs) -> str:
        """The person's zone: profile `timezone`, else the configured or host zone (worked
        out once per version of the profile)."""
        lines = self._lines(self._paths(dirs).profile, body_lines)
        hit = self._zones.get(dirs.tenant)
        if hit is not None and hit[0] is lines:
            return hit[1]
        zone = person_zone(lines, self.default_tz)
        self._zones[dirs.tenant] = (lines, zone)
        return zone

    def now_note(self, dirs: TenantDirs, now: float) -> str:
        """The current minute in the person's zone, put before their newest message."""
        return now_note(now, self.zone(dirs))

    def _vouching(self, view: object) -> tuple[str, ...] | None:
        """The tables whose versions vouch for a view's answer (() none: it reads no
        table; None: nothing vouches, so it is asked every turn)."""
        said = declared(view)
        if said is None or (said.files is not None and said.files is not self.files):
            return None
        if not said.tables:
            return ()
        return None if self._changes is None else said.tables

    def _view_token(self, tables: tuple[str, ...] | None, tenant: str) -> Hashable | None:
        """What vouches for a view's answer now, by its tables (`_vouching`)."""
        if not tables or self._changes is None:
            return tables
        return self._changes.token(tables, tenant)

    async def prepare(self, tenant: str) -> None:
        """Read the tenant's prompt rows that are missing or stale in their stores' mirrors
        (`TableChanges.prepare`; none when nothing changed): awaited before `take`."""
        if self._changes is not None:
            await self._changes.prepare(tenant)

    def _tokens(
        self, tenant: str, chat: str | None
    ) -> tuple[dict[str, Hashable | None], dict[str, Hashable | None]]:
        """What vouches for each part: those of the tenant, those of the chat."""
        changes = self._changes
        if not (self._chat and chat):
            chat_token: Hashable | None = ()  # no chat settings: nothing chosen
        elif changes is not None:
            chat_token = changes.token(("chat_settings",), tenant)
        else:
            chat_token = None
        personas = self._personas
        persona_token = None
        if chat_token is not None and personas.files is self.files:
            persona_token = (chat_token, personas.dirs)
        mine: dict[str, Hashable | None] = {
            "operator": (),
            "steering": (),
            "profile": (),
            "memory": (),
            "vault": (),
            "skills": self._view_token(self._vouch[0], tenant),
            "style": self._view_token(self._vouch[1], tenant),
            "tools": self._view_token(self._vouch[2], tenant),
        }
        chats: dict[str, Hashable | None] = {"chat": chat_token, "persona": persona_token}
        if not self._cached:
            return dict.fromkeys(mine), dict.fromkeys(chats)
        return mine, chats

    def _chat_of(self, key: tuple[str, str, str]) -> _Chat:
        found = self._chats.get(key)
        if found is None:
            found = self._chats[key] = _Chat()
            if len(self._chats) > self._remember:
                self._chats.popitem(last=False)
        self._chats.move_to_end(key)
        return found

    def _parts_of(self, root: str) -> Parts:
        """The tenant's own parts, shared by its chats."""
        found = self._tenant_parts.get(root)
        if found is None:
            found = self._tenant_parts[root] = Parts()
            if len(self._tenant_parts) > self._remember:
                self._tenant_parts.popitem(last=False)
        self._tenant_parts.move_to_end(root)
        return found

    def take(
        self, dirs: TenantDirs, channel: str, chat: str | None, msg_id: str, now: float
    ) -> Snapshot:
        with self.files.batch():  # it only reads: one look at the watch's queue
            return self._take(dirs, channel, chat, msg_id, now)

    def _take(
        self, dirs: TenantDirs, channel: str, chat: str | None, msg_id: str, now: float
    ) -> Snapshot:
        tenant = dirs.tenant
        paths = self._paths(dirs)
        root = str(dirs.root)
        memo = self._chat_of((root, channel, chat or ""))
        parts = self._parts_of(root)
        tokens, chat_tokens = self._tokens(tenant, chat)
        keeper = self._keeper
        holds = keeper.begin(parts, tokens)
        chat_holds = keeper.begin(memo.parts, chat_tokens)
        if memo.made and len(holds) == len(tokens) and len(chat_holds) == len(chat_tokens):
            kept = self._kept(parts, memo, msg_id, now)  # every part held: no part asked
            if kept is not None and kept.channel == channel:
                return kept

        def part(name: str, compute: Callable[[], Any]) -> Any:
            return keeper.get(parts, name, tokens[name], compute, name in holds)

        def chat_part(name: str, compute: Callable[[], Any]) -> Any:
            return keeper.get(memo.parts, name, chat_tokens[name], compute, name in chat_holds)

        operator = part("operator", lambda: self._steering.text(self._op_steering, self._op_conf))
        steering = part("steering", lambda: self._steering.text(paths.steering, paths.conf))
        profile = part("profile", lambda: self._lines(paths.profile, body_lines))
        memory = part("memory", lambda: self._memory(dirs, paths.memory_index))
        vault_names = part("vault", lambda: vault.names(dirs, self.files))
        chosen: dict[str, str] = chat_part(
            "chat",
            lambda: self._chat.get_all(tenant, channel, chat) if self._chat and chat else {},
        )
        persona = chat_part("persona", lambda: self._persona(chosen.get("persona")))
        skills = part("skills", lambda: tuple(self._skills.active(dirs)))
        bullets: tuple[BulletRow, ...] = part("style", lambda: tuple(self._style.bullets(dirs)))
        rows: tuple[ToolRow, ...] = part("tools", lambda: tuple(self._tools.tools(dirs)))
        if len(holds) != len(tokens):
            keeper.seal(parts)
        if len(chat_holds) != len(chat_tokens):
            keeper.seal(memo.parts)
        lines = self._lines_at(memo, rows, now)
        shown = _shown(bullets, msg_id)
        made: tuple[object, ...] = (operator, steering, profile, memory, vault_names, chosen)
        made += (persona, skills, bullets, lines)
        if len(made) != len(memo.made) or any(
            a is not b for a, b in zip(made, memo.made, strict=True)
        ):
            memo.made, memo.snapshots = made, {}
        cohort = tuple(row.bid for row in shown)
        snap = memo.snapshots.get(cohort)
        if snap is not None and snap.channel == channel:
            return snap
        base = self._bases.get(channel)
        if base is None:
            base = self._bases[channel] = base_prompt(channel, self._styles)
        snap = Snapshot(
            tenant=tenant,
            channel=channel,
            base=base,
            operator_steering=operator,
            tenant_steering=steering,
            profile=profile,
            memory=memory,
            memory_cap=self.memory_cap,
            vault_names=vault_names,
            persona=persona[0],
            persona_system=persona[1],
            audience=chosen.get("audience") or self._audience.get(channel) or "",
            skills=skills,
            bullets=tuple(ShownBullet(row.bid, row.text) for row in shown),
            tools=lines,
            shadow_on=any(row.state == "shadow" for row in shown),
        )
        if len(memo.snapshots) >= 16:  # cohorts of many shadow bullets
            memo.snapshots.clear()
        memo.snapshots[cohort] = snap
        return snap

    def _kept(self, parts: Parts, memo: _Chat, msg_id: str, now: float) -> Snapshot | None:
        """When every part held (`Keeper.begin`): the chat's snapshot for this message's
        cohort, if the parts' kept values and the tool lines at `now` are those it was
        made of (what `_take` would find asking each part), else None."""
        mine, chat = parts.parts, memo.parts.parts
        bullets = mine["style"].value
        made = (
            mine["operator"].value,
            mine["steering"].value,
            mine["profile"].value,
            mine["memory"].value,
            mine["vault"].value,
            chat["chat"].value,
            chat["persona"].value,
            mine["skills"].value,
            bullets,
            self._lines_at(memo, mine["tools"].value, now),
        )
        if len(made) != len(memo.made) or not all(map(is_, made, memo.made)):
            return None
        return memo.snapshots.get(tuple(row.bid for row in _shown(bullets, msg_id)))

    def _persona(self, chosen: str | None) -> tuple[str, str]:
        persona = self._personas.get(chosen)
        return (persona.name, persona.append_system) if persona else (DEFAULT, "")

    def _lines_at(self, memo: _Chat, rows: tuple[ToolRow, ...], now: float) -> tuple[ToolLine, ...]:
        """Block 9's lines at `now`: kept from the first time they were made until the
        first moment an "(unused Nd)" label would read differently."""
        hit = memo.lines
        if hit is not None and hit[0] is rows and hit[1] <= now < hit[2]:
            return hit[3]
        lines = tuple(_tool_lines(rows, now))
        memo.lines = (rows, now, _next_label_change(rows, now), lines)
        return lines


def _mtime(key: StatKey) -> int | None:
    return key[2] if key is not None else None


def _topic_times(folder: Path) -> dict[str, int]:
    """Each topic file of a memory folder and its modification time (ns)."""
    out: dict[str, int] = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if parse_filename(entry.name) is not None:
                    with contextlib.suppress(FileNotFoundError):
                        out[entry.name] = entry.stat().st_mtime_ns
    except (FileNotFoundError, NotADirectoryError):
        pass
    return out


def _shown(bullets: Sequence[BulletRow], msg_id: str) -> tuple[BulletRow, ...]:
    """The bullets this message is shown: the live ones and the shadow ones of its cohort."""
    return tuple(
        row
        for row in bullets
        if row.state == "live" or (row.state == "shadow" and shadow_cohort(msg_id, row.bid))
    )


def _next_label_change(rows: Sequence[ToolRow], now: float) -> float:
    """The first time after `now` at which some row's idle days (as `_tool_lines` shows
    them: only from UNUSED_DAYS on) move."""
    soonest = float("inf")
    for row in rows:
        since = row.last_used if row.last_used is not None else row.created
        idle = int((now - since) // DAY)
        soonest = min(soonest, since + DAY * max(idle + 1, UNUSED_DAYS))
    return soonest


def _tool_lines(rows: Sequence[ToolRow], now: float) -> list[ToolLine]:
    out = []
    for row in rows:
        since = row.last_used if row.last_used is not None else row.created
        idle = int((now - since) // DAY)
        out.append(
            ToolLine(row.name, row.description, idle if idle >= UNUSED_DAYS else None, since)
        )
    return out

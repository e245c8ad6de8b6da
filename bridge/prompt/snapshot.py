"""The frozen snapshot of a tenant's loadout for one turn, and the taker that builds it.

A `Snapshot` holds everything the nine blocks render, as plain strings and
tuples, so blocks are pure functions of it and two snapshots compare equal
exactly when the prompt would be the same. `SnapshotTaker.take` reads through
stat-checked caches: when nothing changed, a turn costs `stat` calls, one
SQLite query and the views, and no file is opened.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from bridge.core.filecache import FileCache
from bridge.loadout import vault
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.personas import DEFAULT, Personas
from bridge.loadout.profile import body_lines
from bridge.loadout.steering import (
    Confinement,
    SteeringCache,
    operator_confinement,
    tenant_confinement,
)
from bridge.memory.files import INDEX_NAME, index_entries
from bridge.prompt.base import base_prompt
from bridge.prompt.now import now_note
from bridge.prompt.views import (
    PersonalToolsView,
    SkillRow,
    SkillsView,
    StyleView,
    ToolRow,
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
    ) -> None:
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

    def _lines(self, path: Path, fn: Callable[[str], list[str]]) -> tuple[str, ...]:
        """fn(text of path), remembered while the cached text object is the same."""
        text = self.files.read(path) or ""
        key = (str(path), fn.__name__)
        hit = self._derived.get(key)
        if hit is not None and hit[0] is text:
            return hit[1]
        out = tuple(fn(text))
        self._derived[key] = (text, out)
        return out

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
        """The person's zone: profile `timezone`, else the configured or host zone."""
        return person_zone(self._lines(self._paths(dirs).profile, body_lines), self.default_tz)

    def now_note(self, dirs: TenantDirs, now: float) -> str:
        """The current minute in the person's zone, put before their newest message."""
        return now_note(now, self.zone(dirs))

    def take(
        self, dirs: TenantDirs, channel: str, chat: str | None, msg_id: str, now: float
    ) -> Snapshot:
        tenant = dirs.tenant
        chosen = self._chat.get_all(tenant, channel, chat) if self._chat and chat else {}
        persona = self._personas.get(chosen.get("persona"))
        paths = self._paths(dirs)
        shown = [
            row
            for row in self._style.bullets(dirs)
            if row.state == "live" or (row.state == "shadow" and shadow_cohort(msg_id, row.bid))
        ]
        return Snapshot(
            tenant=tenant,
            channel=channel,
            base=base_prompt(channel, self._styles),
            operator_steering=self._steering.text(self._op_steering, self._op_conf),
            tenant_steering=self._steering.text(paths.steering, paths.conf),
            profile=self._lines(paths.profile, body_lines),
            memory=self._lines(paths.memory_index, index_entries),
            memory_cap=self.memory_cap,
            vault_names=vault.names(dirs, self.files),
            persona=persona.name if persona else DEFAULT,
            persona_system=persona.append_system if persona else "",
            audience=chosen.get("audience") or self._audience.get(channel) or "",
            skills=tuple(self._skills.active(dirs)),
            bullets=tuple(ShownBullet(row.bid, row.text) for row in shown),
            tools=tuple(_tool_lines(self._tools.tools(dirs), now)),
            shadow_on=any(row.state == "shadow" for row in shown),
        )


def _tool_lines(rows: Sequence[ToolRow], now: float) -> list[ToolLine]:
    out = []
    for row in rows:
        since = row.last_used if row.last_used is not None else row.created
        idle = int((now - since) // DAY)
        out.append(
            ToolLine(row.name, row.description, idle if idle >= UNUSED_DAYS else None, since)
        )
    return out

"""Builds the loadout of a running roost from the settings and the chat settings store.

`build_loadout` returns one `Loadout` holding the prompt source (for the
TurnRunner), the memory tool source, the chat command sets, and the vault
(whose `masker(root)` masks secret values out of replies). The views of
blocks 7-9 are passed in; the file-based defaults are used otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bridge.core.commands import CommandSet
from bridge.core.config import Settings
from bridge.core.filecache import FileCache, NoCache
from bridge.core.locks import TenantLocks
from bridge.core.turn import PickModel
from bridge.corrections.subjects import subject_of
from bridge.loadout.chat_commands import AudienceCommands, PersonaCommands, ProfileCommands
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.personas import SHIPPED, Personas
from bridge.loadout.profile import Profile
from bridge.loadout.vault import Vault
from bridge.memory.commands import MemoryCommands
from bridge.memory.service import Memory
from bridge.memory.store import MemoryStore
from bridge.memory.tidy import Consolidator
from bridge.memory.tools import MemoryTools
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.view import SavedToolsView
from bridge.prompt.blocks import make_blocks
from bridge.prompt.snapshot import SnapshotTaker
from bridge.prompt.source import LoadoutPrompt
from bridge.prompt.views import (
    FileSkills,
    PersonalToolsView,
    SkillsView,
    StaticStyle,
    StyleView,
)
from bridge.types.audit_sink import AuditSink


@dataclass
class Loadout:
    prompt: LoadoutPrompt
    memory: Memory
    profile: Profile
    vault: Vault
    personas: Personas
    chats: ChatSettings | None
    tool_source: MemoryTools
    command_sets: tuple[CommandSet, ...]
    files: FileCache
    tidy: Consolidator | None = None  # memory consolidation (/memory tidy)


def audience_defaults(settings: Settings) -> dict[str, str]:
    out = {}
    if settings.telegram.audience:
        out["telegram"] = settings.telegram.audience
    return out


def persona_dirs(settings: Settings) -> list[Path]:
    """Where personas come from: the shipped (or configured) directory, then the home's."""
    return [settings.loadout.personas_dir or SHIPPED, Path(settings.home) / "personas"]


def _wall_ms() -> int:
    """The tools view only reads; the catalog's clock stamps saves made elsewhere."""
    return int(time.time() * 1000)


def build_loadout(
    settings: Settings,
    chats: ChatSettings | None,
    audit: AuditSink,
    *,
    skills: SkillsView | None = None,
    style: StyleView | None = None,
    tools: PersonalToolsView | None = None,
    cached: bool = True,
    hold: PickModel | None = None,
    styles: Mapping[str, str] | None = None,
    files: FileCache | None = None,
) -> Loadout:
    """The loadout of every tenant; `styles`: block 1's line per channel (the platforms'
    declarations, `Platforms.styles()`; without it every channel gets the plain line).

    `chats` (loaded: `ChatSettings.load`) carries the process's `TableChanges`, whose
    versions the prompt's memo keeps: the stores behind `skills` and `style` are made
    with the same one, or their parts are computed again every turn."""
    caps = settings.loadout
    files = (files or FileCache()) if cached else NoCache()  # `files`: the caller's (watched)
    locks = TenantLocks()
    vault = Vault(audit, files)
    store = MemoryStore(
        caps.memory_chars,
        caps.topic_chars,
        settings.memory.archive_after_days,
        instruction_subject=subject_of,  # a feedback save supersedes one on the same subject
    )
    memory = Memory(store, audit, vault.values, locks)
    profile = Profile(caps.profile_chars, audit, locks)
    personas = Personas(persona_dirs(settings), files)  # a reload sets them again (app.live)
    # the versions of the tenant's mirrored rows the prompt's memo keeps
    changes = chats.changes if chats is not None and cached else None
    defaults = audience_defaults(settings)
    taker = SnapshotTaker(
        home=settings.home,
        memory_cap=caps.memory_chars,
        steering_cap=caps.steering_file_chars,
        chat_settings=chats,
        personas=personas,
        skills=skills or FileSkills(cache=files),
        style=style or StaticStyle(),
        tools=tools or SavedToolsView(ToolCatalog(files, _wall_ms)),
        audience_defaults=defaults,
        files=files,
        cached=cached,
        default_tz=settings.schedule.timezone,
        styles=styles,
        changes=changes,
        refresh_memory=store.rebuild_index,  # a topic file edited by hand
    )
    prompt = LoadoutPrompt(taker, make_blocks(caps), remember=512 if cached else 0)
    tidy = Consolidator(memory, audit, vault.masker, hold)  # hold: the chat's model
    sets = command_sets(settings, memory, profile, personas, chats, audit, tidy)
    return Loadout(
        prompt, memory, profile, vault, personas, chats, MemoryTools(memory), sets, files, tidy
    )


def command_sets(
    settings: Settings,
    memory: Memory,
    profile: Profile,
    personas: Personas,
    chats: ChatSettings | None,
    audit: AuditSink,
    tidy: Consolidator | None = None,
) -> tuple[CommandSet, ...]:
    """/memory and /profile always; /persona and /audience when chat settings are stored."""
    sets: list[CommandSet] = [MemoryCommands(memory, tidy), ProfileCommands(profile)]
    if chats is not None:
        sets += [
            PersonaCommands(personas, chats, audit),
            AudienceCommands(
                chats, audit, audience_defaults(settings), settings.loadout.audience_chars
            ),
        ]
    return tuple(sets)

"""/tools and /tool save|show|rm: the person decides what to keep.

Nothing is ever deleted automatically; "unused 90d" is only a flag (from
last use, or from creation when never used). Saving is the person's consent,
so `/tool save` answers with what was consented to (`consent_lines`): the
description, the parameters, the vault secrets and network hosts the tool
declares, and its hash prefix; a changed declaration needs a new save.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bridge.core.commands import Command, CommandContext, UsageError
from bridge.core.words import count
from bridge.personal_tools.catalog import ToolCatalog
from bridge.types.audit_sink import AuditSink
from forge.library import SavedTool, SessionTools, ToolExists, ToolNotFound, ToolSpec
from forge.names import BadName, bare_name

SAVE_USAGE = "/tool save <name> [as <alias>] [--replace]"


def _params(schema: dict[str, Any]) -> str:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = []
    for name, spec in props.items():
        kind = spec.get("type", "any")
        kind = "|".join(kind) if isinstance(kind, list) else kind
        parts.append(f"{name}: {kind}" + ("" if name in required else "?"))
    return ", ".join(parts)


def consent_lines(spec: ToolSpec) -> list[str]:
    """What saving `spec` allows: the vault secrets it may read and the hosts it may call."""
    hosts = spec.network
    return [
        f"Parameters: {_params(spec.schema) or 'none'}",
        f"It may read these vault secrets: {', '.join(spec.secrets) or 'none'}",
        f"It may call these network hosts: {', '.join(hosts) or 'none'}",
        f"sha256 {spec.sha256[:12]}…",
    ]


def _when(ms: int | None) -> str:
    if not ms:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


class ToolCommands:
    def __init__(self, sessions: SessionTools, catalog: ToolCatalog, audit: AuditSink) -> None:
        self._sessions, self._catalog, self._audit = sessions, catalog, audit

    def commands(self) -> Iterable[Command]:
        return (
            Command("tools", "/tools", "your personal me.* tools: calls, last use", self.listing),
            Command(
                "tool",
                f"{SAVE_USAGE} | /tool show me.<name> | /tool rm me.<name>",
                "keep a tool written in this chat, show one, or remove one",
                self.tool,
            ),
        )

    def _key(self, ctx: CommandContext) -> str:
        return f"{ctx.tenant}/{ctx.inbound.channel}/{ctx.inbound.chat}"

    async def listing(self, ctx: CommandContext, args: str) -> str:
        library = self._catalog.library(ctx.dirs.tools)
        now_ms = int(ctx.now * 1000)
        saved = library.list()
        lines: list[str] = []
        if saved:
            lines.append("Your personal tools:")
            for t in saved:
                flag = " · unused 90d" if t.unused(now_ms) else ""
                lines.append(
                    f"- me.{t.spec.name}({_params(t.spec.schema)}) — {t.spec.description} · "
                    f"{count(t.usage.calls, 'call')}, last use {_when(t.usage.last_used_ms)}{flag}"
                )
        kept = {t.spec.sha256 for t in saved}
        drafts = [d for d in self._sessions.list(self._key(ctx)) if d.sha256 not in kept]
        if drafts:
            lines.append("Written in this chat, not saved yet:")
            lines += [f"- {d.name} — {d.description} (/tool save {d.name})" for d in drafts]
        return "\n".join(lines) or (
            "No personal tools yet. Ask the assistant to write one (the forge persona is good "
            "at it: /persona forge), then keep it with /tool save <name>."
        )

    async def tool(self, ctx: CommandContext, args: str) -> str:
        words = args.split()
        if not words:
            raise UsageError()
        verb, rest = words[0], words[1:]
        if verb == "save":
            return await self._save(ctx, rest)
        if verb == "show" and len(rest) == 1:
            return self._show(ctx, rest[0])
        if verb in ("rm", "remove", "delete") and len(rest) == 1:
            return await self._remove(ctx, rest[0])
        raise UsageError()

    async def _save(self, ctx: CommandContext, words: list[str]) -> str:
        replace = "--replace" in words
        words = [w for w in words if w != "--replace"]
        if len(words) == 1:
            name, alias = words[0], None
        elif len(words) == 3 and words[1] == "as":
            name, alias = words[0], words[2]
        else:
            raise UsageError(f"Usage: {SAVE_USAGE}")
        spec = self._sessions.get(self._key(ctx), name.removeprefix("me."))
        if spec is None:
            drafts = ", ".join(d.name for d in self._sessions.list(self._key(ctx))) or "none"
            return f"There is no tool {name!r} written in this chat (written here: {drafts})."
        library = self._catalog.library(ctx.dirs.tools)
        try:
            saved = library.save(spec, alias=alias, saved_from=ctx.inbound.channel, replace=replace)
        except ToolExists:
            target = alias or spec.name
            return (
                f"me.{target} already exists. To overwrite it: /tool save {spec.name} as "
                f"{target} --replace"
            )
        except BadName as exc:
            return str(exc)
        await self._audit.emit(
            "tool.saved",
            ctx.tenant,
            {"name": f"me.{saved.spec.name}", "hash": saved.spec.sha256[:12], "replace": replace},
        )
        return "\n".join(
            (
                f"Saved me.{saved.spec.name}({_params(saved.spec.schema)}) — "
                f"{saved.spec.description}",
                *consent_lines(spec),
                "Offered from your next message on; a changed tool needs a new /tool save.",
            )
        )

    def _find(self, ctx: CommandContext, name: str) -> SavedTool:
        try:
            return self._catalog.library(ctx.dirs.tools).show(bare_name(name))
        except (ToolNotFound, BadName):
            raise UsageError(f"There is no personal tool {name}; /tools lists them.") from None

    def _show(self, ctx: CommandContext, name: str) -> str:
        t = self._find(ctx, name)
        u = t.usage
        return "\n".join(
            (
                f"me.{t.spec.name} — {t.spec.description}",
                f"Parameters: {_params(t.spec.schema) or 'none'}",
                f"sha256: {t.spec.sha256}",
                f"Saved {_when(t.created_ms)} from {t.saved_from or 'unknown'}; "
                f"{count(u.calls, 'call')}, {count(u.errors, 'error')}, "
                f"last use {_when(u.last_used_ms)}",
                f"Secrets: {', '.join(t.spec.secrets) or 'none'}",
                f"Network: {', '.join(t.spec.network) or 'none'}",
                "```python",
                t.spec.source.rstrip(),
                "```",
            )
        )

    async def _remove(self, ctx: CommandContext, name: str) -> str:
        t = self._find(ctx, name)
        self._catalog.library(ctx.dirs.tools).remove(t.spec.name)
        await self._audit.emit(
            "tool.removed", ctx.tenant, {"name": f"me.{t.spec.name}", "hash": t.spec.sha256[:12]}
        )
        return f"Removed me.{t.spec.name}."

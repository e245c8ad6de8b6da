"""/tools and /tool save|show|rm|undo|drop: the person decides what to keep.

Nothing is ever deleted automatically; "unused 90d" is only a flag (from
last use, or from creation when never used). Saving is the person's consent
to exactly one version of a tool (`bridge.personal_tools.consent`):
`/tool save NAME [as ALIAS]` saves nothing; it shows the description, the
parameters, the vault secrets and network hosts that version may use, its
hash, how to read its code when it may use secrets or hosts (`/tool show
NAME` shows a draft of this chat, labelled unsaved, before a saved tool of
that name; `me.NAME` the saved one first), and what changed since the version
the person was last shown (or since the saved tool it would replace), records
which version it showed (`DraftStore.show`) and offers a one-tap button bound
to its hash (`consent.confirm_command`; `/tool yes HASH [as ALIAS]` when the
typed form does not fit a button). `/tool save NAME yes [HASH]` saves only
when the draft is still the version the last `/tool save NAME` showed (and
HASH, when given, names it); otherwise it saves nothing, says what the draft
is now and asks for a new `/tool save NAME`, and what counts as shown does
not move (so a stale button pressed twice never saves a rewrite). The drafts
are kept per chat in roost.db (`bridge.personal_tools.drafts`), at most
`MAX_DRAFTS` of them: `/tool drop NAME` forgets one draft of this chat (every
version), `/tool drop all` every one; a saved tool is never touched by it.
`/tools` lists at most `LISTED` drafts, and how many more there are.
`/tool rm me.NAME` removes a saved tool at once and keeps that version
(`bridge.personal_tools.removed`) for `/tool undo me.NAME` (an "↩ Undo" button),
which saves exactly it again; a bare `/tool rm NAME` (one word from `/tool drop
NAME`) removes nothing and asks for the full name. The consent also names the
declared secrets not in the vault yet and the operator's command that stores
one (`bridge.personal_tools.vault_names`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from bridge.core.commands import Command, CommandContext, Refused, UsageError
from bridge.core.words import count
from bridge.personal_tools import removed
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.consent import (
    MAX_COMMAND_BYTES,
    MIN_HASH,
    capabilities,
    code_lines,
    confirm_command,
    fenced,
    params,
    prompt,
    refusal,
    said,
    save_command,
)
from bridge.personal_tools.drafts import Draft, DraftStore
from bridge.personal_tools.vault_names import missing, missing_note, stored_keys
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Action, Final
from forge.names import BadName, bare_name, check_name

if TYPE_CHECKING:  # the forge's library (and its policy compiler): imported when a command uses it
    from forge.library import SavedTool, ToolLibrary, ToolSpec

SAVE_USAGE = "/tool save <name> [as <alias>] [yes <hash>]"
YES_USAGE = "/tool yes <hash> [as <alias>]"
DROP_USAGE = "/tool drop <name>|all"
RM_USAGE = "/tool rm me.<name>"
UNDO_USAGE = "/tool undo me.<name>"
LISTED = 20  # drafts /tools lists
_HEX = frozenset("0123456789abcdef")


def _when(ms: int | None) -> str:
    if not ms:
        return "never"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


@dataclass(frozen=True, slots=True)
class SaveOrder:
    """`/tool save` parsed: which draft, under which name, and a confirmation if given."""

    name: str
    alias: str | None = None
    confirm: bool = False
    given: str | None = None  # the hash the confirmation names (lower-case hex)


def parse_save(words: list[str]) -> SaveOrder:
    """`NAME [as ALIAS] [--replace] [yes [HASH]]` (`--replace` is implied by consent)."""
    words = [w for w in words if w != "--replace"]
    if not words:
        raise UsageError(f"Usage: {SAVE_USAGE}")
    name, rest, alias = words[0].removeprefix("me."), words[1:], None
    if len(rest) >= 2 and rest[0] == "as":
        alias, rest = rest[1].removeprefix("me."), rest[2:]
    confirm, given = False, None
    if rest[:1] == ["yes"]:
        confirm, given, rest = True, (rest[1].lower() if len(rest) > 1 else None), rest[2:]
    if rest:
        raise UsageError(f"Usage: {SAVE_USAGE}")
    return SaveOrder(name, alias, confirm, given)


def parse_yes(words: list[str]) -> tuple[str, str | None]:
    """`HASH [as ALIAS]` (a button's short form): the hash (lower-case) and the alias."""
    if len(words) not in (1, 3) or (len(words) == 3 and words[1] != "as"):
        raise UsageError(f"Usage: {YES_USAGE}")
    given = words[0].lower()
    if len(given) < MIN_HASH or set(given) - _HEX:
        raise UsageError(f"Usage: {YES_USAGE} (at least {MIN_HASH} hex digits of the hash)")
    return given, (words[2].removeprefix("me.") if len(words) == 3 else None)


def consented(order: SaveOrder, shown: str | None, current: str) -> bool:
    """Whether a confirmation names exactly the version the last prompt showed."""
    if not order.confirm or shown != current:
        return False
    given = order.given
    if given is None:
        return True
    return len(given) >= MIN_HASH and set(given) <= _HEX and current.startswith(given)


class ToolCommands:
    def __init__(self, drafts: DraftStore, catalog: ToolCatalog, audit: AuditSink) -> None:
        self._drafts, self._catalog, self._audit = drafts, catalog, audit

    def commands(self) -> Iterable[Command]:
        return (
            Command("tools", "/tools", "your personal me.* tools: calls, last use", self.listing),
            Command(
                "tool",
                f"{SAVE_USAGE} | {YES_USAGE} | /tool show [me.]<name> | {RM_USAGE} | "
                f"{UNDO_USAGE} | {DROP_USAGE}",
                "keep a tool written in this chat, show one, remove one (and undo that), "
                "or drop drafts",
                self.tool,
            ),
        )

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
                    f"- me.{t.spec.name}({params(t.spec.schema)}) — {said(t.spec.description)} · "
                    f"{count(t.usage.calls, 'call')}, last use {_when(t.usage.last_used_ms)}{flag}"
                )
        kept = {t.spec.sha256 for t in saved}
        read = await self._drafts.drafts(ctx.session, LISTED)
        drafts = [d for d in read if d.spec.sha256 not in kept]
        if drafts:
            lines.append("Written in this chat, not saved yet:")
            lines += [
                f"- {d.spec.name} v{d.version} — {said(d.spec.description)} "
                f"(/tool save {d.spec.name})"
                for d in drafts
            ]
        if len(read) == LISTED and (more := len(await self._drafts.names(ctx.session)) - LISTED):
            lines.append(f"… and {count(more, 'older draft')} (/tool drop all forgets every draft)")
        return "\n".join(lines) or (
            "No personal tools yet. Ask the assistant to write one (the forge persona is good "
            "at it: /persona forge), then keep it with /tool save <name>."
        )

    async def tool(self, ctx: CommandContext, args: str) -> str | Final:
        words = args.split()
        if not words:
            raise UsageError()
        verb, rest = words[0], words[1:]
        if verb == "save":
            return await self._save(ctx, parse_save(rest))
        if verb == "yes":
            return await self._yes(ctx, *parse_yes(rest))
        if verb == "show" and len(rest) == 1:
            return await self._show(ctx, rest[0])
        if verb in ("rm", "remove", "delete") and len(rest) == 1:
            return await self._remove(ctx, rest[0])
        if verb == "undo" and len(rest) == 1:
            return await self._undo(ctx, rest[0])
        if verb == "drop" and len(rest) == 1:
            return await self._drop(ctx, rest[0])
        raise UsageError()

    async def _drop(self, ctx: CommandContext, name: str) -> str:
        """Forget one draft of this chat, or all of them (`all`); saved tools stay."""
        if name == "all":
            gone = await self._drafts.remove_all(ctx.session)
            if not gone:
                return "There are no drafts in this chat."
            return f"Dropped {count(gone, 'draft')} written in this chat. Saved tools stay."
        name = name.removeprefix("me.").removeprefix("draft__")
        names = await self._drafts.names(ctx.session)
        if name not in names:
            raise Refused(
                f"There is no draft {name!r} written in this chat (written here: {_listed(names)})."
            )
        await self._drafts.remove(ctx.session, name)
        return f"Dropped the draft {name} (every version). Saved tools stay."

    async def _save(self, ctx: CommandContext, order: SaveOrder) -> str | Final:
        draft = await self._drafts.latest(ctx.session, order.name)
        if draft is None:
            names = _listed(await self._drafts.names(ctx.session))
            raise Refused(
                f"There is no tool {order.name!r} written in this chat (written here: {names})."
            )
        try:
            target = check_name(order.alias or draft.spec.name)
        except BadName as exc:
            return str(exc)
        library = self._catalog.library(ctx.dirs.tools)
        existing = _saved(library, target)
        shown = await self._drafts.shown(ctx.session, draft.spec.name)
        if consented(order, shown, draft.spec.sha256):
            return await self._keep(ctx, draft.spec, target, library, existing)
        baseline = await self._baseline(ctx, draft, target, existing, shown)
        if order.confirm:  # not for the version shown: nothing saved, `shown` stays
            return _refused(draft, target, baseline, existing is not None)
        return await self._offer(ctx, order, draft, target, existing, baseline)

    async def _yes(self, ctx: CommandContext, given: str, alias: str | None) -> str | Final:
        """`/tool yes HASH [as ALIAS]`: the confirmation of the draft whose last consent
        prompt showed version HASH (a button's short form), checked like the long one."""
        names = await self._drafts.shown_as(ctx.session, given)
        if len(names) != 1:
            why = (
                "no consent prompt in this chat showed that version now"
                if not names
                else f"it names more than one draft ({', '.join(names)})"
            )
            return (
                f"Not saved: {why}. Send /tool save <name> to be shown a draft, "
                "then confirm it; /tools lists the drafts."
            )
        return await self._save(ctx, SaveOrder(names[0], alias, True, given))

    async def _baseline(
        self,
        ctx: CommandContext,
        draft: Draft,
        target: str,
        existing: SavedTool | None,
        shown: str | None,
    ) -> tuple[str, ToolSpec] | None:
        """What the current version is compared with: the version last shown, else the
        saved tool it would replace."""
        spec = draft.spec
        seen = await self._drafts.by_hash(ctx.session, spec.name, shown) if shown else None
        if seen is not None and seen.spec.sha256 != spec.sha256:
            return (f"the version you were last shown (v{seen.version})", seen.spec)
        if existing is not None:
            return (f"your saved me.{target}", existing.spec)
        return None

    async def _offer(
        self,
        ctx: CommandContext,
        order: SaveOrder,
        draft: Draft,
        target: str,
        existing: SavedTool | None,
        baseline: tuple[str, ToolSpec] | None,
    ) -> Final:
        """Show what keeping this exact version allows, and what changed; remember it."""
        spec = draft.spec
        text = prompt(spec, draft.version, target, baseline, existing is not None)
        note = missing_note(missing(spec.secrets, stored_keys(ctx.dirs)), ctx.tenant)
        if note:  # before the "To keep it, send" line
            head, _, last = text.rpartition("\n")
            text = "\n".join((head, *note, last))
        await self._drafts.show(ctx.session, spec.name, spec.sha256)
        changed = baseline is not None and baseline[1].sha256 != spec.sha256
        await self._audit.emit(
            "tool.offered",
            ctx.tenant,
            {"name": f"me.{target}", "hash": spec.sha256[:12], "changed": changed},
        )
        command = confirm_command(spec.name, order.alias, spec.sha256)
        return Final(text, "command", actions=(Action(f"Keep me.{target}", command),))

    async def _keep(
        self,
        ctx: CommandContext,
        spec: ToolSpec,
        target: str,
        library: ToolLibrary,
        existing: SavedTool | None,
    ) -> str:
        """Save the consented version (replacing `existing`: the prompt said so)."""
        alias = target if target != spec.name else None
        saved = library.save(spec, alias=alias, saved_from=ctx.inbound.channel, replace=True)
        await self._drafts.remove(ctx.session, spec.name)
        replace = existing is not None
        await self._audit.emit(
            "tool.saved",
            ctx.tenant,
            {"name": f"me.{saved.spec.name}", "hash": saved.spec.sha256[:12], "replace": replace},
        )
        return "\n".join(
            (
                f"Saved me.{saved.spec.name}({params(saved.spec.schema)}) — "
                f"{said(saved.spec.description)}",
                *capabilities(spec)[1:],
                *missing_note(missing(spec.secrets, stored_keys(ctx.dirs)), ctx.tenant),
                "Offered from your next message on; a changed tool needs a new /tool save.",
            )
        )

    def _find(self, ctx: CommandContext, name: str) -> SavedTool:
        from forge.library import ToolNotFound

        try:
            return self._catalog.library(ctx.dirs.tools).show(bare_name(name))
        except (ToolNotFound, BadName):
            raise Refused(f"There is no personal tool {name}; /tools lists them.") from None

    async def _show(self, ctx: CommandContext, name: str) -> str:
        """A draft of this chat (labelled unsaved) or a saved tool: `me.NAME` prefers
        the saved one, a bare NAME the draft; each says when the other exists too."""
        bare = name.removeprefix("me.").removeprefix("draft__")
        draft = await self._drafts.latest(ctx.session, bare)
        try:
            saved: SavedTool | None = self._find(ctx, name)
        except Refused:
            if draft is None:
                raise
            saved = None
        if draft is not None and (saved is None or not name.startswith("me.")):
            also = f"\n(You also have a saved me.{bare}: /tool show me.{bare})" if saved else ""
            return _draft_text(draft) + also
        assert saved is not None
        also = (
            f"\n(This chat also holds an unsaved draft {bare} v{draft.version}: /tool show {bare})"
            if draft is not None and draft.spec.sha256 != saved.spec.sha256
            else ""
        )
        return _saved_text(saved) + also

    async def _remove(self, ctx: CommandContext, name: str) -> str | Final:
        """`/tool rm me.NAME`: removed at once, its version kept for `/tool undo me.NAME`
        (an "↩ Undo" button). A bare NAME (one word from the harmless `/tool drop
        NAME`) removes nothing: it asks for the full name, with a button that sends it."""
        if not name.startswith("me."):
            t = self._find(ctx, name)  # no such tool: says so
            full = f"me.{t.spec.name}"
            draft = await self._drafts.latest(ctx.session, t.spec.name)
            drop = (
                f" To forget the draft {t.spec.name} of this chat instead: "
                f"/tool drop {t.spec.name}."
                if draft is not None
                else ""
            )
            return Final(
                f"Not removed: /tool rm takes the saved tool's full name. Send /tool rm "
                f"{full} to remove {full} (from every chat; /tool undo {full} brings it "
                f"back).{drop}",
                "command",
                actions=(Action(f"Remove {full}", f"/tool rm {full}"),),
            )
        t = self._find(ctx, name)
        tools = ctx.dirs.tools
        removed.keep(tools, t)
        self._catalog.library(tools).remove(t.spec.name)
        await self._audit.emit(
            "tool.removed", ctx.tenant, {"name": f"me.{t.spec.name}", "hash": t.spec.sha256[:12]}
        )
        full = f"me.{t.spec.name}"
        return Final(
            f"Removed {full}.",
            "command",
            actions=(Action(f"↩ Undo removing {full}", f"/tool undo {full}"),),
        )

    async def _undo(self, ctx: CommandContext, name: str) -> str:
        """Bring back the last removed version of me.NAME, exactly (same hash: the
        version the person consented to), unless a tool of that name was saved since."""
        bare = name.removeprefix("me.")
        tools = ctx.dirs.tools
        kept = removed.read(tools, bare)
        if kept is None:
            raise Refused(f"There is no removed me.{bare} to bring back; /tools lists your tools.")
        library = self._catalog.library(tools)
        if _saved(library, bare) is not None:
            return (
                f"Not brought back: a tool me.{bare} was saved since. Remove it first "
                f"(/tool rm me.{bare}), then /tool undo me.{bare}."
            )
        from forge.library import build_spec

        made = build_spec(bare, kept.description, kept.source)
        if made.tool is None or made.tool.sha256 != kept.sha256:
            problems = "; ".join(f"line {f.line}: {f.message}" for f in made.findings[:3])
            return (
                f"Cannot bring back me.{bare}: its code no longer passes the checks "
                f"({problems or 'it changed'}). Ask the assistant to write it again."
            )
        saved = library.save(
            made.tool,
            saved_from=kept.saved_from or ctx.inbound.channel,
            created_ms=kept.created_ms,
        )
        library.usage.restore(bare, kept.usage)  # as it was: its calls and last use
        removed.forget(tools, bare)
        await self._audit.emit(
            "tool.saved",
            ctx.tenant,
            {"name": f"me.{bare}", "hash": saved.spec.sha256[:12], "replace": False},
        )
        return (
            f"Brought back me.{bare} (sha256 {saved.spec.sha256[:12]}…, the version you "
            "removed). Offered from your next message on."
        )


def _refused(
    draft: Draft, target: str, baseline: tuple[str, ToolSpec] | None, replaces: bool
) -> str | Final:
    """Nothing saved; what the draft is now, and the plain command (a button when it
    fits) that shows it for consent."""
    text = refusal(draft.spec, draft.version, target, baseline, replaces)
    command = save_command(draft.spec.name, target)
    if len(command.encode()) > MAX_COMMAND_BYTES:
        return text
    return Final(text, "command", actions=(Action(f"Show me.{target} to keep", command),))


def _draft_text(draft: Draft) -> str:
    """A draft's source, labelled as a draft that is not saved."""
    spec = draft.spec
    return "\n".join(
        (
            f"Draft {spec.name} v{draft.version} — NOT SAVED (written in this chat; "
            f"/tool save {spec.name} asks you to keep it)",
            f"{spec.name}({params(spec.schema)}) — {said(spec.description)}",
            *capabilities(spec),
            *code_lines(spec, "the code below")[1:],
            fenced(spec.source.rstrip(), "python"),
        )
    )


def _saved_text(t: SavedTool) -> str:
    u = t.usage
    return "\n".join(
        (
            f"me.{t.spec.name} — {said(t.spec.description)}",
            f"Parameters: {params(t.spec.schema) or 'none'}",
            f"sha256: {t.spec.sha256}",
            f"Saved {_when(t.created_ms)} from {t.saved_from or 'unknown'}; "
            f"{count(u.calls, 'call')}, {count(u.errors, 'error')}, "
            f"last use {_when(u.last_used_ms)}",
            f"Secrets: {', '.join(t.spec.secrets) or 'none'}",
            f"Network: {', '.join(t.spec.network) or 'none'}",
            fenced(t.spec.source.rstrip(), "python"),
        )
    )


def _saved(library: ToolLibrary, name: str) -> SavedTool | None:
    from forge.library import ToolNotFound

    try:
        return library.show(name)
    except ToolNotFound:
        return None


def _listed(names: list[str]) -> str:
    """Draft names for a message: the first `LISTED`, and how many more."""
    if not names:
        return "none"
    more = f" and {len(names) - LISTED:,} more" if len(names) > LISTED else ""
    return ", ".join(names[:LISTED]) + more

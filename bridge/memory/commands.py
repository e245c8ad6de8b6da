"""Chat commands for memory: /memory (list, show, rm, undo, stats, tidy), /remember.

`/memory rm` has the aliases `forget` and `delete`. `/memory undo` reverts the
last memory change of this tenant (recorded in the journal before it was made);
`/memory undo <name>` only when that change is of topic <name> (the undo button
under a "📝 Saved to memory" marker, pressed after a later change, reverts nothing);
`/memory undo #<ref>` reverts the change its button names: the "↩ Undo deleting"
button under a "🗑 Deleted from memory" marker brings that topic back even after
later changes (unless a topic of its name exists again).
`/memory tidy` asks the chat's model to merge and drop topics and shows the
proposal with an action to apply it (`/memory tidy <id>`); a `/remember` that
meets a full memory shows such a proposal at once (`bridge.memory.tidy`).
`/remember <topic>: <text>` with the name of an existing topic before the colon
replaces that topic (the old version goes into its history, `/memory show <topic>
--history`); with a name no topic has, it makes that topic (`topic_named`: a name
of at most 4 words; a colon of a clock time or an address is text); any other
`/remember` makes a new topic named after its first words (a user fact on a
subject another topic holds still supersedes it, `MemoryStore.save`); a text a
topic already holds (spacing aside) changes nothing.
`/memory proposals` shows what an import proposes to remember (facts the
person stated about themselves, `bridge.memory.proposals`), each with
actions to keep it (`/memory keep <id>`, saved as the person's own note) or
decline it (`/memory decline <id|all>`); each is shown with every word keeping
it stores (`Proposal.shown`), and the reply to a keep repeats the sentence kept.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace

from bridge.core.commands import Command, CommandContext, Refused, UsageError
from bridge.memory import history, journal
from bridge.memory.files import (
    MAX_DESCRIPTION,
    TYPES,
    MemoryInputError,
    Topic,
    parse_filename,
    slug,
    usage_label,
)
from bridge.memory.proposals import ProposalBox
from bridge.memory.service import Memory
from bridge.memory.store import MemoryFull, MemoryRefused, Provenance
from bridge.memory.tidy import HOW_TO_FREE, Consolidator
from bridge.screening.unicode_clean import clean
from bridge.types.messages import Action, Final

_REF = re.compile(r"#([0-9a-f]{8})")
_NAMED = re.compile(r"([^:\n]{1,80}?)\s*:\s*(\S.*)", re.DOTALL)  # "<topic>: <text>"
Sub = Callable[[CommandContext, str], Awaitable[str | Final]]
ELLIPSIS = "..."  # "…" would become "..." in the store (NFKC) and overflow the cut
USAGE = (
    "/memory [list [--all] | show <name> [--history] | rm <name> | undo [name|#ref] | stats | "
    "tidy [id] | proposals | keep <id> | decline <id|all>]"
)


def _who(topic: Topic) -> str:
    m = topic.meta
    by = {"model": "the assistant", "person": "you"}.get(m.get("by", ""), "hand edit")
    where = f" on {m['channel']}, chat {m['chat']}" if m.get("channel") else ""
    msg = f", message {m['msg_id']}" if m.get("msg_id") else ""
    created, updated = m.get("created", "?"), m.get("updated", "?")
    return f"saved by {by}{where}{msg}; created {created}, updated {updated}"


def _has_body(topic: Topic) -> bool:
    """Whether the topic's text says more than its description: a `/remember` saves the
    one text as both, which `/memory show` printed twice."""
    return topic.content.strip() != topic.description.strip()


def _flag(rest: str, flag: str) -> tuple[str, bool]:
    """`rest` without `flag` (anywhere among its words), and whether it was there."""
    parts = rest.split()
    return " ".join(p for p in parts if p != flag), flag in parts


def _replaces(removed: Iterable[str]) -> str:
    """The other topics on its subject a save removed, as "; it replaces 'x'" ('' if none)."""
    names = ", ".join(repr(n) for n in removed)
    return f"; it replaces {names}" if names else ""


def remember_name(text: str) -> str:
    """A topic name from the first words of the text as stored (NFKC), "note" without any.

    A name needs a letter or digit that survives the file name's ASCII folding
    (`files.slug`), so text in a script without one (Chinese, Arabic) is a "note".
    """
    words = re.findall(r"[\w'-]+", clean(text))[:6]
    name = " ".join(words)[:40].strip()
    try:
        slug(name)
    except MemoryInputError:
        return "note"
    return name


def named_topic(text: str) -> tuple[str, str] | None:
    """(topic, rest) of a `/remember <topic>: <text>` (None without a name before a colon)."""
    m = _NAMED.fullmatch(text.strip())
    if m is None or not m.group(1).strip():
        return None
    return m.group(1).strip(), m.group(2).strip()


def topic_named(name: str, rest: str) -> str | None:
    """The name a `/remember <name>: <text>` gives a NEW topic: `name` when it reads as a
    topic's name (at most 4 words and 40 characters, starting with a letter, with a
    letter or digit a file name keeps); None when the colon is part of the text, a clock
    time ("at 10:30") or an address ("https://…"): the topic is then named after the
    text's first words, as any `/remember` (pure)."""
    name = " ".join(clean(name).split())
    if len(name) > 40 or len(name.split()) > 4 or not name[:1].isalpha():
        return None
    if rest.startswith("//") or (name[-1].isdigit() and rest[:1].isdigit()):
        return None
    try:
        slug(name)
    except MemoryInputError:
        return None
    return name


def remember_description(text: str) -> str:
    """The index line for `/remember TEXT`: the text as stored, on one line, cut to fit.

    The store keeps NFKC text (`clean`), which can be longer than what was typed
    ("…" becomes "...", "ﷺ" eighteen characters): normalise first, then cut, with
    an ellipsis that normalisation leaves alone.
    """
    one = " ".join(clean(text).split())
    if len(one) <= MAX_DESCRIPTION:
        return one
    cut = MAX_DESCRIPTION - len(ELLIPSIS)
    while cut > 0:
        desc = clean(one[:cut].rstrip() + ELLIPSIS)
        if len(desc) <= MAX_DESCRIPTION:
            return desc
        cut -= 1
    return ELLIPSIS


def _holding(topics: Iterable[Topic], text: str) -> Topic | None:
    """The topic that already holds `text` as stored (NFKC; spacing aside), if any."""
    wanted = " ".join(clean(text).split())
    for topic in topics:
        if " ".join(topic.content.split()) == wanted:
            return topic
    return None


class MemoryCommands:
    def __init__(self, memory: Memory, tidy: Consolidator | None = None) -> None:
        self._memory = memory
        self._tidy = tidy
        self._subs: dict[str, Sub] = {
            "list": self._list,
            "show": self._show,
            "rm": self._rm,
            "forget": self._rm,
            "delete": self._rm,
            "undo": self._undo,
            "stats": self._stats,
            "tidy": self._tidy_up,
            "proposals": self._proposals,
            "keep": self._keep,
            "decline": self._decline,
        }

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "memory",
                USAGE,
                "what the assistant remembers about you; undo changes",
                self.memory,
                common=True,
            ),
            Command(
                "remember",
                "/remember <text> | /remember <topic>: <new text>",
                "save a memory (no model); `<topic>: <text>` makes that topic or replaces "
                "what it holds",
                self.remember,
                common=True,
            ),
        )

    async def memory(self, ctx: CommandContext, args: str) -> str | Final:
        ctx.dirs.ensure()
        sub, _, rest = args.strip().partition(" ")
        handler = self._subs.get(sub.lower() or "list")
        if handler is None:
            raise UsageError(f"Unknown /memory subcommand {sub!r}.")
        return await handler(ctx, rest.strip())

    async def _list(self, ctx: CommandContext, rest: str) -> str:
        if rest.strip() not in ("", "--all"):
            raise UsageError(f"/memory list takes only --all, not {rest.strip()!r}.")
        every = self._memory.store.topics(ctx.dirs)
        resting = {t.name for t in self._memory.store.archived(ctx.dirs, every, ctx.now)}
        topics = every if rest.strip() == "--all" else [t for t in every if t.name not in resting]
        label = self._memory.usage(ctx.dirs)
        if not topics:
            return f"Memory is empty {label}. Tell me something to remember, or /remember <text>."
        lines = sorted((t.type, t.name.lower(), t.index_line()) for t in topics)
        body = "\n".join(line for *_, line in lines)
        count = f"{len(topics)} topic{'' if len(topics) == 1 else 's'}"
        shown = f"Memory {label}, {count}:\n{body}\n/memory show <name> for one."
        if resting and rest.strip() != "--all":
            shown += f"\n{len(resting)} archived (unused for a while): /memory list --all"
        return shown

    async def _show(self, ctx: CommandContext, rest: str) -> str:
        rest, with_history = _flag(rest, "--history")
        if not rest:
            raise UsageError("Which one? /memory show <name> [--history]")
        topic = await self._memory.read(ctx.dirs, rest, ctx.now)
        if topic is None:
            raise Refused(f"No memory named {rest!r}. /memory list shows the names.")
        shown = f"{topic.name} ({topic.type}): {topic.description}\n{_who(topic)}"
        shown += f"\n\n{topic.content}" if _has_body(topic) else ""
        if not with_history:
            return shown
        earlier = history.versions(ctx.dirs.memory, topic.name)
        if not earlier:
            return shown + "\n\nNo earlier versions."
        parts = [shown, f"\nEarlier versions ({len(earlier)}, newest first):"]
        for v in reversed(earlier):
            old = v.topic
            body = f"\n{old.content}" if _has_body(old) else ""
            parts.append(f"\n— replaced {v.replaced_at}; {_who(old)}\n{old.description}{body}")
        return "\n".join(parts)

    async def _rm(self, ctx: CommandContext, rest: str) -> str:
        if not rest:
            raise UsageError("Which one? /memory rm <name>")
        topic = await self._memory.delete(ctx.dirs, rest, "person", ctx.now)
        if topic is None:
            raise Refused(f"No memory named {rest!r}; nothing deleted.")
        return f"Forgot {topic.name!r}. /memory undo brings it back."

    async def _undo(self, ctx: CommandContext, rest: str) -> str:
        ref = _REF.fullmatch(rest)
        last = journal.peek(ctx.dirs.memory)
        if ref is None and rest.startswith("#") and (last is None or last.name != rest):
            raise Refused(
                f"No memory change {rest!r}: a change's reference is # and 8 hex digits, "
                "as its undo button shows. /memory undo reverts the latest change."
            )
        if ref is not None and (last is None or last.name != rest):  # not a topic named so
            try:
                change = await self._memory.undo(ctx.dirs, ref=ref[1])
            except MemoryRefused as exc:
                raise Refused(str(exc)) from None
            if change is None:
                return "Nothing to undo: that change was undone already (or is too old to keep)."
            return self._undone(ctx, change)
        change = await self._memory.undo(ctx.dirs, rest or None)
        if change is None and rest:  # a marker's undo button pressed after a later change
            last = journal.peek(ctx.dirs.memory)
            if last is None:
                return "Nothing to undo."
            raise Refused(
                f"{rest!r} is not the latest memory change ({last.op} {last.name!r} is); "
                "/memory undo reverts the latest, one at a time."
            )
        if change is None:
            return "Nothing to undo."
        return self._undone(ctx, change)

    def _undone(self, ctx: CommandContext, change: journal.Change) -> str:
        ops = {"save": "saving", "delete": "deleting", "consolidate": "the tidy-up"}
        what = ops.get(change.op, change.op)
        return f"Undid {what} {change.name!r}. Memory now {self._memory.usage(ctx.dirs)}."

    async def _stats(self, ctx: CommandContext, rest: str) -> str:
        dirs = ctx.dirs
        topics = self._memory.store.topics(dirs)
        per = Counter(t.type for t in topics)
        size = 0
        for filename in os.listdir(dirs.memory) if dirs.memory.is_dir() else ():
            if parse_filename(filename):
                size += (dirs.memory / filename).stat().st_size
        last = journal.peek(dirs.memory)
        undo = f"{last.op} {last.name!r}" if last else "nothing"
        by_type = ", ".join(f"{t} {per.get(t, 0)}" for t in TYPES)
        store = self._memory.store
        return (
            f"Topics: {len(topics)} ({by_type})\n"
            f"Topic files: {size:,} bytes (each at most {store.topic_cap:,} characters)\n"
            f"Index: {usage_label(store.used(dirs), store.memory_cap)}\n"
            f"Last change (/memory undo reverts it): {undo}"
        )

    async def _tidy_up(self, ctx: CommandContext, rest: str) -> str | Final:
        if self._tidy is None:
            return "Tidying up needs a model; none is wired here. " + HOW_TO_FREE
        if rest:
            return await self._tidy.apply(ctx.dirs, ctx.inbound, rest.split()[0])
        return await self._tidy.propose(ctx.dirs, ctx.inbound)

    async def _proposals(self, ctx: CommandContext, rest: str) -> str | Final:
        waiting = ProposalBox(ctx.dirs.memory).waiting()
        if not waiting:
            return "No memory proposals wait. (An import proposes facts you stated about yourself.)"
        lines = [f"{len(waiting)} memory proposals from your imported conversations:"]
        actions: list[Action] = []
        for p in waiting:
            lines.append(f"• {p.id}: {p.shown}")
            actions.append(Action(f"Keep {p.id}", f"/memory keep {p.id}"))
        lines.append("/memory keep <id> saves one as your note; /memory decline <id|all> drops.")
        actions.append(Action("Decline all", "/memory decline all"))
        return Final("\n".join(lines), "command", actions=tuple(actions))

    async def _keep(self, ctx: CommandContext, rest: str) -> str | Final:
        if not rest:
            raise UsageError("Which one? /memory keep <id> (/memory proposals lists them)")
        box = ProposalBox(ctx.dirs.memory)
        proposal = box.take(rest.split()[0])
        if proposal is None:
            raise Refused(f"No memory proposal {rest.split()[0]!r} waits. /memory proposals")
        inbound = ctx.inbound
        prov = Provenance("person", inbound.channel, inbound.chat, inbound.msg_id)
        try:
            result = await self._memory.save(
                ctx.dirs,
                proposal.name,
                "user",
                proposal.description,
                proposal.content,
                prov,
                ctx.now,
            )
        except MemoryFull:
            box.put_back(proposal)
            return await self.full(
                ctx, f"Not kept yet: memory is full {self._memory.usage(ctx.dirs)}."
            )
        except MemoryRefused as exc:
            raise Refused(str(exc)) from None
        label = usage_label(result.used, result.cap)
        replaces = _replaces(result.removed)
        kept = f"“{' '.join(proposal.sentence.split())}”"
        return f"Kept as {result.topic.name!r} {label}{replaces}: {kept}. /memory undo reverts it."

    async def _decline(self, ctx: CommandContext, rest: str) -> str:
        box, pid = ProposalBox(ctx.dirs.memory), rest.split()[0] if rest else ""
        if pid.lower() == "all":
            n = box.decline_all()
            return f"Declined {n} memory proposals; nothing was stored, none is offered again."
        if not pid:
            raise UsageError("Which one? /memory decline <id|all>")
        if box.decline(pid) is None:
            raise Refused(f"No memory proposal {pid!r} waits. /memory proposals")
        return "Declined; nothing was stored, and it is not offered again."

    async def full(self, ctx: CommandContext, lead: str) -> Final:
        """The reply to a save that met a full memory: a tidy-up proposal when possible,
        marked failed (nothing was saved: `roost send` exits 1)."""
        if self._tidy is None:
            return Final(f"{lead}\n\n{HOW_TO_FREE}", "command", failed=True)
        return replace(await self._tidy.propose(ctx.dirs, ctx.inbound, lead), failed=True)

    async def remember(self, ctx: CommandContext, args: str) -> str | Final:
        text = args.strip()
        if not text:
            raise UsageError("What should I remember?")
        dirs = ctx.dirs.ensure()
        named = named_topic(text)
        existing = self._memory.store.find(dirs, named[0]) if named else None
        if named is not None and existing is not None:
            return await self._replace(ctx, existing, named[1])
        given = topic_named(*named) if named is not None else None
        if given is not None and named is not None:
            text = named[1]  # `/remember coffee: likes flat white` makes the topic `coffee`
        same = _holding(self._memory.store.topics(dirs), text)
        if same is not None:
            return (
                f"Already remembered as {same.name!r} {self._memory.usage(dirs)}; nothing changed."
            )
        base = name = given or remember_name(text)
        n = 2
        while self._memory.store.find(dirs, name) is not None:
            name, n = f"{base} {n}", n + 1
        desc = remember_description(text)
        inbound = ctx.inbound
        prov = Provenance("person", inbound.channel, inbound.chat, inbound.msg_id)
        try:
            result = await self._memory.save(dirs, name, "user", desc, text, prov, ctx.now)
        except MemoryFull:
            return await self.full(ctx, f"Not saved: memory is full {self._memory.usage(dirs)}.")
        except MemoryRefused as exc:
            raise Refused(str(exc)) from None
        label = usage_label(result.used, result.cap)
        return (
            f"Remembered as {result.topic.name!r} {label}{_replaces(result.removed)}. "
            "/memory undo reverts it."
        )

    async def _replace(self, ctx: CommandContext, old: Topic, text: str) -> str | Final:
        """`/remember <topic>: <text>`: the topic holds `text` now, its old version its history."""
        dirs, inbound = ctx.dirs, ctx.inbound
        prov = Provenance("person", inbound.channel, inbound.chat, inbound.msg_id)
        desc = remember_description(text)
        try:
            result = await self._memory.save(dirs, old.name, old.type, desc, text, prov, ctx.now)
        except MemoryFull:
            return await self.full(ctx, f"Not saved: memory is full {self._memory.usage(dirs)}.")
        except MemoryRefused as exc:
            raise Refused(str(exc)) from None
        label = usage_label(result.used, result.cap)
        name = result.topic.name
        if result.superseded is None:
            return f"{name!r} already says that {label}; nothing changed."
        return (
            f"Updated {name!r} {label}{_replaces(result.removed)}: it holds the new text now; "
            f"the earlier one is in its history (/memory show {name} --history). "
            "/memory undo reverts it."
        )

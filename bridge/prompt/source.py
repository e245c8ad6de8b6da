"""`LoadoutPrompt`: the nine-block system prompt of a turn (the spine's PromptSource).

`system_prompt(turn)` takes one snapshot and assembles the blocks; the
TurnRunner calls it once per turn and reuses the text for every model step,
so a write during the turn shows from the next turn on. When the snapshot
is (or equals) the previous one of the same chat, the previous text is
returned as is: byte-identical, no rendering (kept per shadow cohort, so
turns of both cohorts stay cheap; the chat's last one is found first, by the
snapshot object alone; an equal snapshot made anew takes the kept one's place, so it
is compared field by field once, not every turn). Otherwise only the blocks whose fields
changed (`Block.reads`) are rendered again, the rest kept from the chat's
last prompt. `render` gives `roost prompt` the same
blocks with names, sizes and budgets; joining them yields `system_prompt`.
`system_prompt_parts` also says how long the byte-stable prefix is (the
leading stable blocks, `render.stable_chars`) for a provider's prompt cache.
The database rows the prompt shows are read from their stores' mirrors;
`prepare(tenant)` (the `PromptRows` observer, before each turn) reads again
what another process changed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bridge.prompt.render import Block, RenderedBlock, render_block, stable_chars
from bridge.prompt.snapshot import Snapshot, SnapshotTaker
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext

SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Rendered:
    snapshot: Snapshot
    blocks: tuple[RenderedBlock, ...]
    text: str
    stable_chars: int = 0  # text[:stable_chars] is the leading stable blocks
    each: tuple[RenderedBlock | None, ...] = ()  # one per block of the table (None: empty)


class LoadoutPrompt:
    def __init__(
        self,
        taker: SnapshotTaker,
        blocks: Sequence[Block[Snapshot]],
        *,
        remember: int = 512,
    ) -> None:
        self.taker = taker
        self.blocks = tuple(blocks)
        self._last: OrderedDict[tuple[str, str, str, tuple[str, ...]], Rendered] = OrderedDict()
        self._recent: OrderedDict[tuple[str, str, str], Rendered] = OrderedDict()
        self._remember = remember

    def render(
        self, dirs: TenantDirs, channel: str, chat: str | None, msg_id: str, now: float
    ) -> Rendered:
        snap = self.taker.take(dirs, channel, chat, msg_id, now)
        where = (dirs.tenant, channel, chat or "")
        recent = self._recent.get(where)
        if recent is not None and recent.snapshot is snap:  # the chat's last one, as it was
            return recent
        key = (*where, tuple(b.bid for b in snap.bullets))
        last = self._last.get(key)
        if last is not None and last.snapshot is snap:
            self._last.move_to_end(key)
            return last
        if last is not None and last.snapshot == snap:
            # the same prompt from a snapshot made anew (a part changed and changed
            # back): kept under this one, so the next turn knows it by identity and
            # does not compare every field again
            last = self._last[key] = replace(last, snapshot=snap)
            self._last.move_to_end(key)
            self._keep_recent(where, last)
            return last
        each = tuple(self._blocks(snap, last or self._recent.get(where)))
        blocks = tuple(b for b in each if b is not None)
        text = SEPARATOR.join(b.text for b in blocks)
        out = Rendered(snap, blocks, text, stable_chars(blocks, SEPARATOR), each)
        if self._remember <= 0:
            return out
        self._last[key] = out
        if len(self._last) > self._remember:
            self._last.popitem(last=False)
        self._keep_recent(where, out)
        return out

    def _keep_recent(self, where: tuple[str, str, str], out: Rendered) -> None:
        """`out` is the chat's last prompt (at most `remember` chats kept)."""
        self._recent[where] = out
        self._recent.move_to_end(where)
        if len(self._recent) > self._remember:
            self._recent.popitem(last=False)

    def _blocks(self, snap: Snapshot, last: Rendered | None) -> list[RenderedBlock | None]:
        """Each block of the table: the one rendered before when none of the fields it
        reads changed, else rendered again."""
        if last is None or len(last.each) != len(self.blocks):
            return [render_block(block, snap) for block in self.blocks]
        before = last.snapshot
        out = []
        for block, kept in zip(self.blocks, last.each, strict=True):
            same = block.reads is not None and all(
                getattr(snap, f) == getattr(before, f) for f in block.reads
            )
            out.append(kept if same else render_block(block, snap))
        return out

    async def prepare(self, tenant: str) -> None:
        """Read the tenant's prompt rows another process changed (none when nothing did);
        `PromptRows` awaits it before every turn, `roost prompt` before it renders."""
        await self.taker.prepare(tenant)

    def now_note(self, turn: TurnContext) -> str:
        """What the turn puts before the person's message: the date and time in their zone."""
        return self.taker.now_note(turn.dirs, turn.now())

    def system_prompt(self, turn: TurnContext) -> str:
        return self.system_prompt_parts(turn)[0]

    def system_prompt_parts(self, turn: TurnContext) -> tuple[str, int]:
        """The system prompt and the length of its byte-stable prefix."""
        inbound = turn.inbound
        out = self.render(turn.dirs, inbound.channel, inbound.chat, inbound.msg_id, turn.now())
        return out.text, out.stable_chars


class PromptRows:
    """A turn observer: the tenant's prompt rows are current before the turn's prompt is
    built (`LoadoutPrompt.prepare`; the prompt itself is synchronous)."""

    def __init__(self, prompt: LoadoutPrompt) -> None:
        self._prompt = prompt

    async def before_turn(self, turn: TurnContext, session: object, events: object) -> None:
        await self._prompt.prepare(turn.tenant)

    async def after_turn(self, turn: TurnContext, result: object, events: object) -> None:
        return None

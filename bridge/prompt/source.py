"""`LoadoutPrompt`: the nine-block system prompt of a turn (the spine's PromptSource).

`system_prompt(turn)` takes one snapshot and assembles the blocks; the
TurnRunner calls it once per turn and reuses the text for every model step,
so a write during the turn shows from the next turn on. When the snapshot
equals the previous one of the same chat, the previous text is returned as
is: byte-identical, no rendering (kept per shadow cohort, so turns of both
cohorts stay cheap). `render` gives `roost prompt` the same
blocks with names, sizes and budgets; joining them yields `system_prompt`.
`system_prompt_parts` also says how long the byte-stable prefix is (the
leading stable blocks, `render.stable_chars`) for a provider's prompt cache.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.prompt.render import Block, RenderedBlock, render_blocks, stable_chars
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
        self._remember = remember

    def render(
        self, dirs: TenantDirs, channel: str, chat: str | None, msg_id: str, now: float
    ) -> Rendered:
        snap = self.taker.take(dirs, channel, chat, msg_id, now)
        key = (dirs.tenant, channel, chat or "", tuple(b.bid for b in snap.bullets))
        last = self._last.get(key)
        if last is not None and last.snapshot == snap:
            self._last.move_to_end(key)
            return last
        blocks = tuple(render_blocks(self.blocks, snap))
        text = SEPARATOR.join(b.text for b in blocks)
        out = Rendered(snap, blocks, text, stable_chars(blocks, SEPARATOR))
        self._last[key] = out
        if len(self._last) > self._remember:
            self._last.popitem(last=False)
        return out

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

"""Prompt assembly: an ordered table of blocks, each a pure function.

A block turns one frozen snapshot into text; `render_blocks` applies each
block's character budget (announcing any cut inside the block) and skips
empty blocks; the prompt source joins what is left, and `roost prompt`
shows the same blocks with names and sizes. A block is `stable` when its
text stays byte-identical from turn to turn until the person or the operator
changes something; `stable_chars` measures the leading run of stable blocks,
the prefix a provider's prompt cache can keep. A block may name the snapshot
fields it `reads`: the prompt source renders it again only when one of them
changed (a test renders every block against snapshots that differ elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Block(Generic[S]):
    name: str
    budget: int
    render: Callable[[S], str]
    stable: bool = True  # False: may change on any turn (grades, shadow bullets, "unused Nd")
    reads: tuple[str, ...] | None = None  # the snapshot fields it reads (None: say nothing)


@dataclass(frozen=True, slots=True)
class RenderedBlock:
    name: str
    text: str
    budget: int
    size: int  # characters before the budget was applied
    cut: bool
    stable: bool = True


def cap(text: str, budget: int, name: str) -> tuple[str, bool]:
    """Keep whole lines within `budget` characters; announce the cut."""
    if len(text) <= budget:
        return text, False
    note = f"\n[{name}: cut to fit {budget:,} characters; {len(text) - budget:,} more not shown]"
    room = max(0, budget - len(note))
    kept = text[:room]
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]
    return kept + note, True


def render_block(block: Block[S], snapshot: S) -> RenderedBlock | None:
    """The block within its budget (None: it has nothing to say)."""
    text = block.render(snapshot).strip()
    if not text:
        return None
    capped, was_cut = cap(text, block.budget, block.name)
    return RenderedBlock(block.name, capped, block.budget, len(text), was_cut, block.stable)


def render_blocks(blocks: Sequence[Block[S]], snapshot: S) -> list[RenderedBlock]:
    return [r for r in (render_block(b, snapshot) for b in blocks) if r is not None]


def stable_chars(blocks: Sequence[RenderedBlock], separator: str) -> int:
    """Length of the joined text of the leading stable blocks (without the separator after)."""
    size = 0
    for i, block in enumerate(blocks):
        if not block.stable:
            break
        size += len(block.text) + (len(separator) if i else 0)
    return size

"""Text that passed a tenant's masker: the one type every way out of roost accepts.

Every text that leaves roost toward a person, a model, a store or a file
goes through the tenant's masker (`bridge.loadout.mask.Masker`), which
returns `Masked`: a `str` whose type says so. The stores and senders that
write text (the session store, the outbox, the job store, the draft store,
a summary fold) take `Masked` in their signatures (mypy) and check it when
called (`require`), so a new feature that hands them plain text fails its
first test instead of leaking. Anything made from a `Masked` text (a slice,
a concatenation, an f-string) is a plain `str` again and must go through the
masker once more: joining two masked pieces can spell a value anew.

Only `bridge.loadout.mask` builds a `Masked` (`tests/spine/test_egress.py`
checks the source tree for any other constructor call). Imports nothing
from the project.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Masked(str):
    """A text that passed a tenant's masker (built only by `bridge.loadout.mask`)."""

    __slots__ = ()


class Unmasked(TypeError):
    """A way out was handed text that did not pass the tenant's masker."""


def require(text: str, where: str) -> Masked:
    """`text` as `Masked`, or `Unmasked` naming the way out (never the text)."""
    if not isinstance(text, Masked):
        raise Unmasked(f"{where} takes only masked text (bridge.loadout.mask.Masker.mask)")
    return text


class TextMask(Protocol):
    """A tenant's masker as a way out needs it (`bridge.loadout.mask.Masker`)."""

    def mask(self, text: str) -> Masked: ...


def masked_strings(value: Any, mask: Callable[[str], str]) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string in it, at
    any depth, through `mask` (dict keys are left as they are: fields, not text)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: masked_strings(v, mask) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked_strings(v, mask) for v in value]
    return value

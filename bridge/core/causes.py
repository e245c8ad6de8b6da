"""Whether an exception, or anything it was raised from, is of a kind (its cause chain)."""

from __future__ import annotations

from collections.abc import Callable


def caused_by(exc: BaseException, test: Callable[[BaseException], bool]) -> bool:
    """`test` holds for `exc` or for an exception in its `__cause__`/`__context__` chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if test(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False

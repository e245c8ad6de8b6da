"""A thing made when it is first used: the one piece both first-use stand-ins share.

`Lazy(make)` holds the function that makes the real object; `real` makes it once,
`made` says whether it was. `bridge.app.lazy_broker` (the sandbox's network broker:
aiohttp) and `bridge.app.lazy_runner` (the sandbox runner: `forge.runner`'s chain)
are the two stand-ins built on it, so a command that never needs them never imports
what they bring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """The real `T`, made by `make` at the first use of `real`."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._real: T | None = None

    @property
    def real(self) -> T:
        if self._real is None:
            self._real = self._make()
        return self._real

    @property
    def made(self) -> bool:
        return self._real is not None

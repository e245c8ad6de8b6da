"""A write a turn's observer leaves for the turn's end (`TurnObserver.after_turn`).

The turn writes it in the same transaction as its session append and its
usage count (`bridge.core.turn`: one unit, `bridge.storage.units.together`),
so a turn's end is one commit, one job on SQLite's writer. When that unit
cannot commit (the exchange is then not stored), `alone` writes it by itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bridge.storage.units import Made


@dataclass(frozen=True, slots=True)
class EndWrite:
    unit: Made[Any]  # a pure function of its arguments: SQLite may make it again
    alone: Callable[[], Awaitable[object]]  # the same write in its own transaction

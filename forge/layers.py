"""Which of the sandbox's layers run: all of them, except in the layer tests.

A module of its own so that the daemon side (the runner, the helper process)
can name it without importing what runs inside a sandbox child
(`forge.child`, with its confinement and policy modules).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Layers:
    """Which layers run. Production always runs all of them: the runner only takes
    a `Layers` through its explicit `layers_for_tests` parameter, and the helper
    reads it once from its command line, never from a request. The layer tests
    switch one off at a time to show that the next one still holds."""

    lint: bool = True
    restricted: bool = True
    gate: bool = True
    landlock: bool = True
    seccomp: bool = True
    rlimits: bool = True
    drop_caps: bool = True

    def switched_off(self) -> list[str]:
        return [name for name in self.__slots__ if not getattr(self, name)]

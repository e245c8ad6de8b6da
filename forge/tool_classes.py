"""Which classes a tool's own class statements made: forge.policy.guards `make_class`
records each one, and forge.checked_types asks before it lets the real
`dataclasses.dataclass` write into a class (the attacker pass atk6 F3: the checked
`dataclass` wrote `__eq__`, `__setattr__`, `__hash__ = None` ... into `UserDict`,
`Counter`, `Generic` and forge's own classes, past the write guard).

A tool cannot forge the mark: only `make_class` records, it records the class its
metaclass call just made, and a tool holds neither this module nor the table.
Kept by identity with weak references (a class is never compared, hashed or kept
alive here). Imports nothing of forge, so both may use it."""

from __future__ import annotations

import weakref

_MADE: dict[int, weakref.ref[type]] = {}


def record(cls: type) -> None:
    """Mark `cls` as a class the tool made."""
    key = id(cls)

    def forget(_gone: object, key: int = key) -> None:
        _MADE.pop(key, None)

    _MADE[key] = weakref.ref(cls, forget)


def made_by_tool(cls: object) -> bool:
    """Whether `cls` is a class a tool's class statement made (or forge made from one)."""
    found = _MADE.get(id(cls))
    return found is not None and found() is cls

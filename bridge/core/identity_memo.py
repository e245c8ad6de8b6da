"""A memo keyed by object identity: `ByIdentity`.

A value is remembered per (object, owner, method) identities (owner and method
default to None: the object alone). Each entry keeps its objects alive, so an id
is not reused while it is kept; all entries are dropped at `size`. Used where
the same objects come back every turn (the agent loop's masked messages and
schemas, a saved tool's tool object), so a lookup is a dict get and identity
checks.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByIdentity(Generic[K, V]):
    """Values remembered per (object, owner, method) identities; all dropped at `size`."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._entries: dict[int, tuple[K, object, object, V]] = {}
        self._size = size

    def get(self, key: K, owner: object = None, func: object = None) -> V | None:
        hit = self._entries.get(id(key))
        if hit is not None and hit[0] is key and hit[1] is owner and hit[2] is func:
            return hit[3]
        return None

    def put(self, key: K, owner: object, func: object, value: V) -> V:
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[id(key)] = (key, owner, func, value)
        return value

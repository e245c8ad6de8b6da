"""Subscribers per topic, shared by both backends: who to wake when a topic's notify arrives."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from bridge.storage.errors import StorageError

TOPIC = re.compile(r"^[a-z0-9_]{1,48}$")


def check_topic(topic: str) -> str:
    if not TOPIC.match(topic):
        raise StorageError(f"a notify topic is 1-48 of a-z 0-9 _, not {topic!r}")
    return topic


class Sub:
    """One subscription: an event set by a notify and cleared by `wait`."""

    def __init__(self, hub: Hub, topic: str) -> None:
        self._hub, self.topic = hub, topic
        self._event = asyncio.Event()
        self.closed = False

    def wake(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
        self._event.clear()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hub.remove(self)

    async def __aenter__(self) -> Sub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class Hub:
    """Topic -> its subscriptions; `on_first`/`on_last` tell a backend to LISTEN/UNLISTEN."""

    def __init__(
        self,
        on_first: Callable[[str], None] = lambda topic: None,
        on_last: Callable[[str], None] = lambda topic: None,
    ) -> None:
        self._subs: dict[str, set[Sub]] = {}
        self._on_first, self._on_last = on_first, on_last

    def add(self, topic: str) -> Sub:
        sub = Sub(self, check_topic(topic))
        first = topic not in self._subs
        self._subs.setdefault(topic, set()).add(sub)
        if first:
            self._on_first(topic)
        return sub

    def remove(self, sub: Sub) -> None:
        subs = self._subs.get(sub.topic)
        if subs is None:
            return
        subs.discard(sub)
        if not subs:
            del self._subs[sub.topic]
            self._on_last(sub.topic)

    def topics(self) -> list[str]:
        return list(self._subs)

    def wake(self, topic: str) -> None:
        for sub in self._subs.get(topic, ()):
            sub.wake()

    def wake_all(self) -> None:
        for subs in self._subs.values():
            for sub in subs:
                sub.wake()

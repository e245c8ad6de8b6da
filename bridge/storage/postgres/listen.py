"""LISTEN on a connection of its own: one channel per topic with subscribers.

The first subscriber of a topic makes the listener LISTEN on
`roost_<topic>`, then wakes that topic once (a notify between `subscribe`
and the LISTEN would be missed otherwise); the last one leaving UNLISTENs.
When the connection drops, `Health` reconnects; `restart` opens a new
connection, LISTENs again on every topic and wakes all subscribers (what
was sent meanwhile is gone: they look again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg

from bridge.storage.notify import Hub
from bridge.storage.postgres.health import Health

log = logging.getLogger(__name__)
PREFIX = "roost_"


class Listener:
    def __init__(self, url: str, settings: dict[str, str], health: Health) -> None:
        self._url, self._settings, self._health = url, settings, health
        self.hub = Hub(on_first=self._first, on_last=self._last)
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @staticmethod
    def channel(topic: str) -> str:
        return PREFIX + topic

    def _on_notify(self, conn: Any, pid: int, channel: str, payload: str) -> None:
        if channel.startswith(PREFIX):
            self.hub.wake(channel[len(PREFIX) :])

    def _on_lost(self, conn: Any) -> None:
        if conn is self._conn and not self._closed:
            self._conn = None
            self._health.lost()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _first(self, topic: str) -> None:
        self._spawn(self._listen(topic))

    def _last(self, topic: str) -> None:
        self._spawn(self._unlisten(topic))

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            conn = await asyncpg.connect(self._url, server_settings=self._settings)
            conn.add_termination_listener(self._on_lost)
            self._conn = conn
        return self._conn

    async def _listen(self, topic: str) -> None:
        async with self._lock:
            try:
                conn = await self._connection()
                await conn.add_listener(self.channel(topic), self._on_notify)
            except Exception as exc:  # the server is away: the restart after it LISTENs
                log.warning("LISTEN %s failed (%s)", topic, type(exc).__name__)
                self._health.lost()
                return
        self.hub.wake(topic)

    async def _unlisten(self, topic: str) -> None:
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.is_closed() and topic not in self.hub.topics():
                with contextlib.suppress(Exception):
                    await conn.remove_listener(self.channel(topic), self._on_notify)

    async def restart(self) -> None:
        """After a reconnect: a new connection, every topic listened to again, all woken."""
        async with self._lock:
            old, self._conn = self._conn, None
            if old is not None and not old.is_closed():
                old.terminate()
            topics = self.hub.topics()
            if topics:
                conn = await self._connection()
                for topic in topics:
                    await conn.add_listener(self.channel(topic), self._on_notify)
        self.hub.wake_all()

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._conn is not None and not self._conn.is_closed():
            with contextlib.suppress(Exception):
                await self._conn.close(timeout=5)

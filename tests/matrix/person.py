"""The person on the other side: a plain aiohttp client of Synapse's client-server API.

It creates rooms (direct, group, encrypted), invites, sends text and files,
and follows its rooms by long-polling `/sync`: `wait(pred)` syncs until
`pred()` holds (the bound only stops a hang). `answers(room)` is what the
person sees from the bot: its messages in order, each with its latest
`m.replace` edit applied; `edits(room)` counts the edits.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Any

import aiohttp

WAIT_S = 90.0  # a safety net against a hung run, not a speed check


class Person:
    def __init__(self, url: str, user_id: str, token: str) -> None:
        self.url, self.user_id, self._token = url, user_id, token
        self.session = aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"})
        self.since: str | None = None
        self.timeline: dict[str, list[dict[str, Any]]] = {}

    async def close(self) -> None:
        await self.session.close()

    async def call(self, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        async with self.session.request(method, self.url + path, json=body, **kw) as resp:
            data = await resp.json(content_type=None)
            if resp.status != 200:
                raise AssertionError(f"{method} {path}: {resp.status} {data}")
            assert isinstance(data, dict)
            return data

    async def create_room(
        self, invite: list[str], *, direct: bool = True, encrypted: bool = False
    ) -> str:
        body: dict[str, Any] = {"invite": invite, "is_direct": direct, "preset": "private_chat"}
        if encrypted:
            body["initial_state"] = [
                {
                    "type": "m.room.encryption",
                    "state_key": "",
                    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
                }
            ]
        got = await self.call("POST", "/_matrix/client/v3/createRoom", body)
        room = str(got["room_id"])
        self.timeline.setdefault(room, [])
        return room

    async def invite(self, room: str, user: str) -> None:
        await self.call("POST", f"/_matrix/client/v3/rooms/{room}/invite", {"user_id": user})

    async def join(self, room: str) -> None:
        await self.call("POST", f"/_matrix/client/v3/join/{room}", {})
        self.timeline.setdefault(room, [])

    async def send(self, room: str, content: dict[str, Any], kind: str = "m.room.message") -> str:
        txn = secrets.token_hex(8)
        path = f"/_matrix/client/v3/rooms/{room}/send/{kind}/{txn}"
        async with self.session.put(self.url + path, json=content) as resp:
            data = await resp.json(content_type=None)
            assert resp.status == 200, data
            return str(data["event_id"])

    async def say(self, room: str, text: str, **extra: Any) -> str:
        return await self.send(room, {"msgtype": "m.text", "body": text, **extra})

    async def upload(self, data: bytes, mime: str, name: str) -> str:
        async with self.session.post(
            self.url + "/_matrix/media/v3/upload",
            data=data,
            params={"filename": name},
            headers={"Content-Type": mime},
        ) as resp:
            got = await resp.json(content_type=None)
            assert resp.status == 200, got
            return str(got["content_uri"])

    async def sync_once(self, timeout_ms: int = 5000) -> None:
        params = {"timeout": str(timeout_ms)}
        if self.since:
            params["since"] = self.since
        got = await self.call("GET", "/_matrix/client/v3/sync", params=params)
        self.since = got["next_batch"]
        rooms = got.get("rooms", {})
        for section in ("join", "leave"):
            for room, data in rooms.get(section, {}).items():
                events = data.get("timeline", {}).get("events", [])
                self.timeline.setdefault(room, []).extend(events)

    async def wait(self, pred: Callable[[], bool], what: str = "") -> None:
        deadline = time.monotonic() + WAIT_S
        while not pred():
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what or pred}")
            await self.sync_once()

    # -- what the person sees ----------------------------------------------------------------

    def membership(self, room: str, user: str) -> str | None:
        found = None
        for e in self.timeline.get(room, []):
            if e.get("type") == "m.room.member" and e.get("state_key") == user:
                found = e["content"].get("membership")
        return found

    def joins(self, room: str, user: str) -> int:
        return sum(
            1
            for e in self.timeline.get(room, [])
            if e.get("type") == "m.room.member"
            and e.get("state_key") == user
            and e["content"].get("membership") == "join"
        )

    def from_bot(self, room: str, bot: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.timeline.get(room, [])
            if e.get("type") == "m.room.message" and e.get("sender") == bot
        ]

    def answers(self, room: str, bot: str) -> list[dict[str, Any]]:
        """The bot's messages as shown: contents with their latest edit applied."""
        shown: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for e in self.from_bot(room, bot):
            rel = e["content"].get("m.relates_to", {})
            if rel.get("rel_type") == "m.replace":
                if rel.get("event_id") in shown:
                    shown[rel["event_id"]] = e["content"]["m.new_content"]
            else:
                shown[e["event_id"]] = e["content"]
                order.append(e["event_id"])
        return [shown[i] for i in order]

    def texts(self, room: str, bot: str) -> list[str]:
        return [c["body"] for c in self.answers(room, bot)]

    def edits(self, room: str, bot: str) -> int:
        return sum(
            1
            for e in self.from_bot(room, bot)
            if e["content"].get("m.relates_to", {}).get("rel_type") == "m.replace"
        )


async def gather_rooms(*people: Person) -> None:
    await asyncio.gather(*(p.sync_once(0) for p in people))

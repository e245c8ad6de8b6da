"""A platform is one module and one row: a toy platform declared in this file only.

Everything the toy platform needs is below: its declaration (`Platform`:
name, identities, `--to` address, abilities, base prompt line), a channel
(Inbound in, the core's `Reply` out, an outbox `deliver`), and its row. The
real daemon (`serve()` with the row added, the fake OpenAI server as the
model and the speech server, the real audit chain on disk) then gives it
what Telegram gets through the shared code: people mapped in
`[tenants.carol] toy_ids`, strangers refused, its channel kept in every
audit record, its line in the base prompt, `roost send --to toy:<id>`
delivered by the scheduler, spoken answers after `/voice on`, and the files
a reply hands out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.app.channels_up import CHANNELS, PLATFORMS, ChannelRow, Launched
from bridge.app.platforms import platforms_of
from bridge.app.serve import serve
from bridge.channels.telegram.voice import Speak
from bridge.cli.schedule import send_to
from bridge.core.config import ConfigError, Settings, load_settings
from bridge.schedule.outbox import OutboxEntry
from bridge.types.messages import Answer, Final, Inbound
from bridge.types.platform import Abilities, Platform
from tests.fakes.fake_openai import FakeOpenAI

KEY = "sk-toy-test-key-0123456789"
WAIT_S = 60.0  # a safety net against a hung run, not a speed check
STYLE = "The person reads on a toy screen: one short line."

TOY = Platform(
    name="toy",
    title="Toy",
    style=STYLE,
    identity=re.compile(r"[0-9]{1,6}"),
    ids_key="toy_ids",
    address="toy:<id>",
    parse_address=lambda rest: rest if rest.isdecimal() and len(rest) <= 6 else None,
    identity_of_chat=lambda chat: chat,
    abilities=Abilities(voice=True, files=True),
)


class ToyChannel:
    """A whole chat platform adapter: messages in, replies, voice and files out."""

    def __init__(self, answer: Answer, speak: Speak) -> None:
        self._answer, self._speak = answer, speak
        self.sent: list[Final] = []
        self.voices: list[bytes] = []
        self.delivered: list[OutboxEntry] = []
        self.changed = asyncio.Event()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def receive(self, user: str, text: str) -> Final:
        inbound = Inbound("toy", user, user, text, uuid.uuid4().hex)
        before = len(self.sent)
        await self._answer(inbound, _Reply(self, inbound))
        return self.sent[-1] if len(self.sent) > before else Final("", "silent")

    async def deliver(self, entry: OutboxEntry) -> None:  # the outbox's deliver
        self.delivered.append(entry)
        self.changed.set()


class _Reply:
    def __init__(self, toy: ToyChannel, inbound: Inbound) -> None:
        self._toy, self._inbound = toy, inbound

    def working(self) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()

    async def delta(self, piece: str) -> None:
        return None

    async def send(self, final: Final) -> None:
        self._toy.sent.append(final)
        if final.kind == "answer":
            spoken = await self._toy._speak(self._inbound, final.text)
            if isinstance(spoken, bytes):
                self._toy.voices.append(spoken)


def toy_row(made: list[ToyChannel]) -> ChannelRow:
    def factory(settings: Settings, roost: Roost, up: Mapping[str, Launched]) -> Launched:
        toy = ToyChannel(roost.core.answer, roost.voice.speak_hook("toy"))
        made.append(toy)
        return Launched(toy, lambda: "roost: toy ready", deliver=toy.deliver)

    return ChannelRow("toy", lambda settings: True, factory, TOY)


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key=KEY) as server:
        yield server


def toy_settings(home: Path, model: FakeOpenAI) -> Settings:
    return load_settings(
        home=home,
        web={"enabled": False},
        llm={"base_url": model.base_url, "api_key": KEY, "model": "m"},
        tenants={"carol": {"toy_ids": ["42"]}},
    )


async def test_a_toy_row_gets_audit_identities_send_to_speech_and_files(
    home: Path, model: FakeOpenAI
) -> None:
    settings = toy_settings(home, model)
    toys: list[ToyChannel] = []
    rows = (*CHANNELS, toy_row(toys))
    ready = asyncio.Event()
    serving = asyncio.create_task(serve(settings, ready=lambda port: ready.set(), channels=rows))
    try:
        await asyncio.wait_for(ready.wait(), WAIT_S)
        (toy,) = toys
        hello = await toy.receive("42", "hello")
        assert hello == Final("echo: hello", "answer"), "toy_ids maps 42 to carol: no pairing"
        system = model.requests[-1]["messages"][0]["content"]
        assert STYLE in system, "block 1 has the toy's own line"
        assert (await toy.receive("99", "hi")).kind == "refusal"
        assert (await toy.receive("99", "hi again")).kind == "silent", "then silence"
        on = await toy.receive("42", "/voice on")
        assert on.text == "🔊 Answers in this chat are now also spoken."
        await toy.receive("42", "say it")
        assert toy.voices and toy.voices[-1][:4] == b"OggS", "the answer, spoken"
        exported = await toy.receive("42", "/export")
        assert exported.files and exported.files[0].path.name.endswith(".zip")

        args = argparse.Namespace(to="toy:42", text=["ping"], key=None, tenant=None)
        assert await asyncio.to_thread(send_to, args, settings, platforms_of(rows)) == 0
        await asyncio.wait_for(toy.changed.wait(), WAIT_S)  # the scheduler noticed the row
        (entry,) = toy.delivered
        assert (entry.tenant, entry.channel, entry.chat, entry.text) == (
            "carol",
            "toy",
            "42",
            "ping",
        )
    finally:
        if ready.is_set():
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            serving.cancel()
    assert await asyncio.wait_for(serving, WAIT_S) == 0

    records = [
        json.loads(line) for line in (home / "audit" / "chain.jsonl").read_text().splitlines()
    ]
    assert not [r for r in records if "channel" in r["details"].get("_dropped", [])]
    toy_events = {r["event"] for r in records if r["details"].get("channel") == "toy"}
    expected = {"message.received", "message.answered", "access.refused", "voice.changed"}
    assert expected | {"voice.spoken", "outbox.delivered"} <= toy_events
    (refused,) = [r for r in records if r["event"] == "access.refused"]
    assert refused["details"]["identity"] == "99"


async def test_without_its_row_the_toy_ids_are_refused_by_name(
    home: Path, model: FakeOpenAI
) -> None:
    settings = toy_settings(home, model)
    with pytest.raises(ConfigError, match=r"tenants\.carol\.toy_ids: no platform"):
        await build(settings)
    args = argparse.Namespace(to="toy:42", text=["ping"], key=None, tenant=None)
    assert send_to(args, settings, PLATFORMS) == 2, "no such --to form without the row"
    assert "toy" not in PLATFORMS


def test_a_toy_identity_the_declaration_refuses_names_the_key(home: Path) -> None:
    settings = load_settings(home=home, tenants={"carol": {"toy_ids": ["4x2"]}})
    from bridge.core.identities import identity_map

    with pytest.raises(ConfigError, match=r"toy_ids: '4x2' is not a Toy identity"):
        identity_map(settings.tenants, PLATFORMS.with_(TOY))

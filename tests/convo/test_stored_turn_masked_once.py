"""A stored turn's messages are masked once: the next turns' histories take them as stored.

The turn masks the person's message, its tool steps and the answer with its masker
before the session store keeps them (`Masked`); the store's cached history hands those
very objects to the next turn, whose agent loop masks the history the model is sent
(`MaskMemo.history`). The turn keeps them as masked by its masker (`masked_already`),
so the next turn masks only its own new message, while the vault's masker is the same
object. A vault that changed between the turns (a new masker) masks them again: a value
added after a turn is masked in what every later request replays.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from bridge.app.build import Roost, build
from bridge.core import mask_memo
from bridge.core.config import Settings
from bridge.core.mask_memo import MaskMemo, redacted
from bridge.loadout import vault
from bridge.loadout.mask import Masker
from bridge.types.audit_sink import MemoryAudit
from bridge.types.backend import ChatMessage, ToolCallRequest
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

SECRET = "hunter2-secret-value"


@pytest.fixture
def backend() -> ScriptedBackend:
    return ScriptedBackend()  # answers "ok" to every request


@pytest.fixture
async def wired(settings: Settings, clock: Clock, backend: ScriptedBackend) -> AsyncIterator[Roost]:
    made = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[ChatMessage]:
    """Every message the agent loop's memo masks from now on (`redacted`), in order."""
    masked: list[ChatMessage] = []

    def counted(message: ChatMessage, redact: mask_memo.Redact) -> ChatMessage:
        masked.append(message)
        return redacted(message, redact)

    monkeypatch.setattr(mask_memo, "redacted", counted)
    return masked


async def test_the_next_turn_masks_only_its_own_message(
    wired: Roost, backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await wired.core.handle(Inbound("web", "local", "c1", "first question", "m1"))
    await wired.core.handle(Inbound("web", "local", "c1", "second question", "m2"))
    masked = _counting(monkeypatch)
    await wired.core.handle(Inbound("web", "local", "c1", "third question", "m3"))
    # the stored "second question" and its answer are not masked again: only the new message
    assert [m.content for m in masked] == ["third question"]
    sent = backend.requests[-1].messages
    asked = ("first question", "second question", "third question", "ok")
    said = [(m.role, m.content) for m in sent if m.content in asked]  # no Now note
    assert said == [
        ("user", "first question"),
        ("assistant", "ok"),
        ("user", "second question"),
        ("assistant", "ok"),
        ("user", "third question"),
    ]


async def test_a_value_added_to_the_vault_after_a_turn_is_masked_in_the_history(
    wired: Roost, backend: ScriptedBackend
) -> None:
    await wired.core.handle(Inbound("web", "local", "c1", "hello", "m1"))
    await wired.core.handle(Inbound("web", "local", "c1", f"my password is {SECRET}", "m2"))
    assert SECRET in backend.requests[-1].messages[-1].content  # no vault value yet
    vault.set_value(wired.tenant_dirs("local"), "PASS", SECRET)
    await wired.core.handle(Inbound("web", "local", "c1", "and now?", "m3"))
    sent = backend.requests[-1].messages
    assert any("[vault:PASS]" in m.content for m in sent)  # the stored message, masked anew
    assert all(SECRET not in m.content for m in sent)


def test_messages_kept_as_masked_equal_masking_them_again() -> None:
    """What `masked_already` keeps is what masking the stored messages again gives: a
    turn's stored messages (each masked by the masker once) over random texts with the
    vault's values, their pieces, tool calls with values in their arguments and ids."""
    rng = random.Random(44)
    values = {"A": SECRET, "B": "ghp_0123456789abcdefghij", "C": "s3cr3t-pass-phrase-xyz"}
    masker = Masker(values)
    pieces = [*values.values(), "[vault:A]", "vault", ":", "]", "[", "abc", " ", "\n", "A"]
    memo = MaskMemo()
    history: list[ChatMessage] = []
    for n in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        calls: tuple[ToolCallRequest, ...] = ()
        if rng.random() < 0.3:
            call_id = rng.choice(("call_1", f"id {SECRET}", "[vault:B]"))
            calls = (ToolCallRequest(call_id, "me.fetch", f'{{"q": "{text}"}}'),)
        stored = redacted(ChatMessage(rng.choice(("user", "assistant")), text, calls), masker.mask)
        memo.masked_already([stored], masker.mask)
        history.append(stored)
        if n % 10 == 9:
            got = memo.history(list(history), masker.mask)
            assert got == [redacted(m, masker.mask) for m in history]
            assert all(not any(v in m.content for v in values.values()) for m in got)

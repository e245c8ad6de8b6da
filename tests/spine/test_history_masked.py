"""`MaskMemo.history` against the plain masking of every message (the function it caches).

Differential: seeded random sequences of turns (histories that grow, slide,
are compacted, are rebuilt from equal but new objects, carry tool calls,
change masker between turns, and interleave two tenants' maskers) must give
exactly `[_redacted(m, redact) for m in history]` each time, and never an
unmasked secret.
"""

from __future__ import annotations

import random
from typing import Literal

from bridge.core.mask_memo import MaskMemo, redacted
from bridge.loadout.mask import Masker
from bridge.types.backend import ChatMessage, ToolCallRequest
from tests.masking import CountingMasker

memo = MaskMemo()  # what these tests mask is remembered here, as a turn runner's

Role = Literal["user", "assistant", "tool"]
SECRETS = ("hunter2-secret-value", "ghp_0123456789abcdefghij", "s3cr3t-pass-phrase-xyz")


def _message(rng: random.Random, n: int) -> ChatMessage:
    secret = rng.choice(SECRETS)
    role: Role = rng.choice(("user", "assistant", "tool"))
    calls: tuple[ToolCallRequest, ...] = ()
    if role == "assistant" and rng.random() < 0.3:
        calls = (ToolCallRequest(f"c{n}", "me.fetch", f'{{"token": "{secret}"}}'),)
    text = rng.choice((f"turn {n}: {secret}", f"turn {n}", f"{secret[:7]} then {secret}"))
    return ChatMessage(role, text, tool_calls=calls)


def test_every_call_equals_masking_each_message() -> None:
    rng = random.Random(26)
    maskers = [Masker({"A": SECRETS[0], "B": SECRETS[1]}), Masker({"C": SECRETS[2]}), Masker({})]
    histories: list[list[ChatMessage]] = [[], []]  # two tenants, interleaved
    n = 0
    for _ in range(600):
        who = rng.randrange(2)
        history = histories[who]
        step = rng.random()
        if step < 0.5:  # a turn: the user's message and the answer appended
            history.extend(_message(rng, n + k) for k in range(rng.randint(1, 3)))
        elif step < 0.65 and history:  # the window slides
            del history[: rng.randint(1, min(4, len(history)))]
        elif step < 0.75:  # compacted: a summary replaces the head
            history[: len(history) // 2] = [ChatMessage("user", f"summary {n} {SECRETS[0]}")]
        elif step < 0.85:  # loaded again: equal messages, new objects
            history[:] = [ChatMessage(m.role, m.content, m.tool_calls) for m in history]
        elif history:  # a message in the middle replaced
            history[rng.randrange(len(history))] = _message(rng, n)
        n += 4
        masker = maskers[who] if rng.random() < 0.8 else rng.choice(maskers)
        got = memo.history(list(history), masker.mask)
        want = [redacted(m, masker.mask) for m in history]
        assert got == want
        if masker is maskers[0]:
            assert not any(SECRETS[0] in m.content or SECRETS[1] in m.content for m in got)


def test_no_secret_survives_a_masker_change_on_the_same_history() -> None:
    history = [ChatMessage("user", f"{i}: {SECRETS[0]}") for i in range(20)]
    plain = Masker({})
    assert memo.history(history, plain.mask)[0].content == f"0: {SECRETS[0]}"
    vault = Masker({"A": SECRETS[0]})
    masked = memo.history([*history, ChatMessage("user", "new")], vault.mask)
    assert all(SECRETS[0] not in m.content for m in masked)


def test_a_growing_history_is_not_masked_again_when_other_tenants_churn_the_cache() -> None:
    mine = CountingMasker(Masker({"A": SECRETS[0]}))
    history = [ChatMessage("user", f"{i}: {SECRETS[0]}") for i in range(40)]
    memo.history(history, mine.mask)
    others = Masker({})
    crowd = [ChatMessage("user", f"other tenant {i}") for i in range(9000)]
    memo.history(crowd, others.mask)  # more than the per-message cache holds
    history.append(ChatMessage("assistant", f"noted {SECRETS[0]}"))
    mine.calls = 0
    again = memo.history(history, mine.mask)
    assert mine.calls == 1  # only the new message
    assert again == [redacted(m, mine.masker.mask) for m in history]


def test_equal_messages_made_again_are_not_masked_again() -> None:
    """A history whose messages after the first are equal but new objects: they are
    masked as the last ones were (equal messages mask alike), with no masker call but
    for the new message, and the secret stays out."""
    memo = MaskMemo()
    mine = CountingMasker(Masker({"A": SECRETS[0]}))
    history = [ChatMessage("user", f"{i}: {SECRETS[0]}") for i in range(40)]
    memo.history(history, mine.mask)
    loaded = [ChatMessage(m.role, m.content) for m in history]
    loaded[0] = history[0]  # the chat's first message: the same object (its memo's key)
    loaded.append(ChatMessage("user", f"new {SECRETS[0]}"))
    mine.calls = 0
    again = memo.history(loaded, mine.mask)
    assert mine.calls == 1
    assert again == [redacted(m, mine.masker.mask) for m in loaded]
    assert all(SECRETS[0] not in m.content for m in again)

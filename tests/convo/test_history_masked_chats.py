"""A tenant's chats share one masker: each chat's growing history is masked once.

The agent loop masks the history it sends (`MaskMemo.history`). The
vault's masker serves every chat of a tenant, so the remembered "last history"
is kept per chat (per masker and first message); a busy tenant's other chats
must not make one chat's whole history be masked again on its next turn.
"""

from __future__ import annotations

from bridge.core.mask_memo import LAST_HISTORIES, MaskMemo, redacted
from bridge.loadout.mask import Masker
from bridge.types.backend import ChatMessage
from tests.masking import CountingMasker

memo = MaskMemo()  # what these tests mask is remembered here, as a turn runner's

SECRET = "hunter2-secret-value"


def test_a_chat_is_not_masked_again_after_the_same_tenants_other_chats() -> None:
    vault = CountingMasker(Masker({"A": SECRET}))
    mine = [ChatMessage("user", f"{i}: {SECRET}") for i in range(40)]
    memo.history(mine, vault.mask)
    # the same tenant's other chats: more messages than the per-message cache holds
    for chat in range(10):
        others = [ChatMessage("user", f"chat {chat} says {i}") for i in range(900)]
        memo.history(others, vault.mask)
    mine.append(ChatMessage("assistant", f"noted {SECRET}"))
    vault.calls = 0
    again = memo.history(mine, vault.mask)
    assert vault.calls == 1  # only the new message
    assert again == [redacted(m, vault.masker.mask) for m in mine]
    assert all(SECRET not in m.content for m in again)


def test_chats_that_alternate_get_each_their_own_history_masked() -> None:
    vault = Masker({"A": SECRET})
    chats: list[list[ChatMessage]] = [[ChatMessage("user", f"chat {c} opens")] for c in range(5)]
    for turn in range(30):
        history = chats[turn % 5]
        history.append(ChatMessage("user", f"turn {turn}: {SECRET}"))
        history.append(ChatMessage("assistant", f"answer {turn}"))
        got = memo.history(list(history), vault.mask)
        assert got == [redacted(m, vault.mask) for m in history]
        assert all(SECRET not in m.content for m in got)


def test_the_kept_histories_are_bounded_and_the_recent_chats_stay() -> None:
    vault = CountingMasker(Masker({"A": SECRET}))
    chats = [[ChatMessage("user", f"chat {c}: {SECRET}")] for c in range(LAST_HISTORIES + 40)]
    for history in chats:
        memo.history(history, vault.mask)
    assert memo.histories <= LAST_HISTORIES  # a daemon with many chats holds a bounded set
    recent = chats[-1]
    recent.append(ChatMessage("assistant", "ok"))
    vault.calls = 0
    assert memo.history(recent, vault.mask) == [redacted(m, vault.masker.mask) for m in recent]
    assert vault.calls == 1

"""Which conversation a chat's post (a reminder, a job's answer) belongs to: its window.

A post (`outbox`) keeps the time it was made in whole milliseconds (`created_ms`); a
conversation's window runs from the previous conversation's archiving to its own
(`conversations.archived_at`, seconds). Every reader and deleter of a conversation's
posts (a page of its history, a deleted conversation's posts) asks by these bounds, so
each post is in exactly one conversation's window.
"""

from __future__ import annotations

from typing import Final

POST_WINDOW: Final = "created_ms > ? AND created_ms <= ?"  # the parameters: `post_window`


def post_window(since_ms: float, until_ms: float | None) -> tuple[int, int]:
    """`POST_WINDOW`'s bounds for the posts made after `since_ms` up to `until_ms` (None:
    no end), at the millisecond a post's time is stored in (`created_ms`, whole ms, rounded
    down): a post made in the millisecond a conversation was archived is that
    conversation's, not the next one's (it was made before the archiving, or in the same
    millisecond)."""
    return int(since_ms), int(until_ms) if until_ms is not None else 2**62

"""A refused reload's ERROR line reads as one sentence.

A configuration error's message is a head line ending in a colon and a line per
problem; the reload's one-line reason joined them as "invalid configuration:; llm…"
(newcomer37, a small finding).
"""

from __future__ import annotations

from bridge.app.reload import one_line


def test_a_line_ending_in_a_colon_is_followed_by_a_space() -> None:
    text = "invalid configuration:\n  llm.model: empty\n\n  web.port: not a number\n"
    assert one_line(text) == "invalid configuration: llm.model: empty; web.port: not a number"
    assert one_line("one\ntwo") == "one; two"
    assert one_line("") == "" and one_line("  \n ") == ""

"""A reasoning model's `<think>…</think>` block, kept out of the answer.

DeepSeek-R1 and Qwen3 served through an OpenAI-compatible API (Ollama, vLLM,
llama.cpp) may open their answer's text with their reasoning between `<think>`
and `</think>` (a server that splits it out sends it as `reasoning_content`,
which roost never reads). The person was shown it, the session stored it and
the model was sent it again with every later turn. `ThinkBlock` drops a block
that opens the answer (whitespace before it aside) as the text streams in:
what may still be the opening tag is held back until it can be told apart, only
a tail that may be the closing tag is kept while inside, and a block that is
never closed is dropped whole. A `<think>` anywhere else is the answer's own
text. Pure: fed text in, text to show out.
"""

from __future__ import annotations

from typing import Literal

OPEN, CLOSE = "<think>", "</think>"

State = Literal["start", "inside", "after", "text"]


class ThinkBlock:
    """One answer's text, fed in pieces, less a leading `<think>` block."""

    def __init__(self) -> None:
        self._state: State = "start"
        self._held = ""

    def feed(self, text: str) -> str:
        """The part of `text` (with what was held) that is the answer's, now."""
        if self._state == "text":
            return text
        self._held += text
        if self._state == "start":
            lead = self._held.lstrip()
            if len(lead) < len(OPEN) and OPEN.startswith(lead):
                return ""  # whitespace, or what may still become the tag
            if not lead.startswith(OPEN):
                return self._to_text()
            self._state, self._held = "inside", lead[len(OPEN) :]
        if self._state == "inside":
            end = self._held.find(CLOSE)
            if end < 0:
                self._held = self._held[-(len(CLOSE) - 1) :]  # may hold the tag's start
                return ""
            self._state, self._held = "after", self._held[end + len(CLOSE) :]
        rest = self._held.lstrip()  # "after": the blank lines between block and answer
        if not rest:
            self._held = ""
            return ""
        self._held = rest
        return self._to_text()

    def finish(self) -> str:
        """What was held and is the answer's, at the end (a block never closed: nothing)."""
        out = self._held if self._state == "start" else ""
        self._state, self._held = "text", ""
        return out

    def _to_text(self) -> str:
        out, self._state, self._held = self._held, "text", ""
        return out

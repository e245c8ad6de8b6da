"""A reasoning model's `<think>…</think>` block, kept out of the answer.

DeepSeek-R1 and Qwen3 served through an OpenAI-compatible API (Ollama, vLLM,
llama.cpp) may open their answer's text with their reasoning between `<think>`
and `</think>` (a server that splits it out sends it as `reasoning_content`, which
roost never shows: then all of the text is the answer, `apart`). The person was shown
it, the session stored it and the model was sent it again with every later turn.
`ThinkBlock` drops a block
that opens the answer (whitespace before it aside) as the text streams in:
what may still be the opening tag is held back until it can be told apart, only
a tail that may be a tag is kept while inside, and a block that is never closed is
dropped whole. A `<think>` anywhere else is the answer's own text. Pure: fed text in,
text to show out.

The block ends at its first `</think>`, as the reasoning parsers of the servers that
run these models read it (vLLM's and SGLang's DeepSeek-R1 and Qwen3 parsers, tabbyAPI:
the text is partitioned at the first end tag) and as the model itself does: in Qwen3
`</think>` is one token that ends its reasoning. So what follows is always shown whole:
the answer is never cut, whatever it says about the tags. A reasoning that quotes the
closing tag (`<think>a<think>b</think>c</think>answer`) shows the rest of itself
(`c</think>answer`), as those servers show it; session 41 counted nested tags instead,
and cut answers that named `</think>` once the tags did not balance (atk2 s41 #1).

The text held back counts: `max_reply_chars` cuts only what is shown, so a block that
never closes (a reasoning model looping) would otherwise be read up to the answer's
32 Mi cap. Past `MAX_THINK_CHARS` inside the block, `feed` raises `ThinkTooLong` (the
backend ends the call with an error the person sees); whitespace alone past it, before
the block or after it, is let through as text (the reply's own cut applies). Each of
the three counts on its own (whitespace before the block does not shorten the block's
allowance), so at most three times the limit is read before anything is shown, and only
the leading whitespace is kept meanwhile. Each piece is looked at once, inside the block
only as far as its allowance: one piece that closes the block past it is too long too.
"""

from __future__ import annotations

from typing import Literal

OPEN, CLOSE = "<think>", "</think>"
# Reasoning held back at most: about 40,000 tokens, beyond DeepSeek-R1's and Qwen3's
# usual thinking budgets (32,768 tokens); an answer past it is a loop, not reasoning.
MAX_THINK_CHARS = 160_000


class ThinkTooLong(ValueError):
    """The leading block went on past `MAX_THINK_CHARS` without closing."""


State = Literal["start", "inside", "after", "text", "apart"]


class ThinkBlock:
    """One answer's text, fed in pieces, less a leading `<think>` block."""

    def __init__(self, limit: int = MAX_THINK_CHARS) -> None:
        self._state: State = "start"
        self._held = ""  # start: what follows the leading whitespace; inside: a tag's tail
        self._space: list[str] = []  # start: the leading whitespace, kept for the answer
        self._seen, self._limit = 0, limit

    def apart(self) -> None:
        """The server sends the reasoning in a field of its own (`reasoning_content`): all of
        the text is the answer, a leading `<think>` too (the person asked about the tag),
        unless a block was already begun."""
        if self._state == "start":
            self._state = "apart"

    def feed(self, text: str) -> str:
        """The part of `text` (with what was held) that is the answer's, now."""
        if self._state == "text":
            return text
        if self._state == "apart":
            return self._to_text() + text
        self._seen += len(text)
        if self._state == "start" and not self._held:  # only whitespace so far
            lead = text.lstrip()  # this piece's is set aside, each piece looked at once
            self._space.append(text[: len(text) - len(lead)])
            text = lead
        self._held += text
        if self._state == "start":
            if self._seen > self._limit and not self._held:
                return self._to_text()  # whitespace alone: the reply's own cut applies
            if len(self._held) < len(OPEN) and OPEN.startswith(self._held):
                return ""  # whitespace, or what may still become the tag
            if not self._held.startswith(OPEN):
                return self._to_text()
            self._state, self._held = "inside", self._held[len(OPEN) :]
            self._space, self._seen = [], len(self._held)  # the block counts from here
        if self._state == "inside":
            end = self._close() if "<" in self._held else -1
            if end < 0:
                if self._seen > self._limit:
                    raise ThinkTooLong(f"no {CLOSE} within {self._limit} characters")
                # a piece with no `<` is dropped whole (most pieces); else only a tail
                # that may be the closing tag's start is kept
                self._held = self._held[-(len(CLOSE) - 1) :] if "<" in self._held else ""
                return ""
            self._state, self._held = "after", self._held[end:]
            self._seen = len(self._held)  # and the blank lines after it from here
        rest = self._held.lstrip()  # "after": the blank lines between block and answer
        if not rest:
            self._held = ""
            if self._seen > self._limit:
                self._state = "text"  # whitespace alone since: the reply's own cut applies
            return ""
        self._held = rest
        return self._to_text()

    def finish(self) -> str:
        """What was held and is the answer's, at the end (a block never closed: nothing)."""
        out = self._to_text() if self._state in ("start", "apart") else ""
        self._state, self._held = "text", ""
        return out

    def _close(self) -> int:
        """Where the text after the block starts in what is held, or -1. Only the block's
        allowance is looked at: a `</think>` past it does not close a block too long."""
        held = self._held
        reach = self._limit - (self._seen - len(held)) + len(CLOSE)  # the allowance's end
        end = held.find(CLOSE, 0, max(reach, 0))
        return end + len(CLOSE) if end >= 0 else -1

    def _to_text(self) -> str:
        out = "".join(self._space) + self._held
        self._state, self._held, self._space = "text", "", []
        return out

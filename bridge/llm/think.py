"""A reasoning model's `<think>…</think>` block, kept out of the answer.

DeepSeek-R1 and Qwen3 served through an OpenAI-compatible API (Ollama, vLLM,
llama.cpp) may open their answer's text with their reasoning between `<think>`
and `</think>` (a server that splits it out sends it as `reasoning_content`,
which roost never reads). The person was shown it, the session stored it and
the model was sent it again with every later turn. `ThinkBlock` drops a block
that opens the answer (whitespace before it aside) as the text streams in:
what may still be the opening tag is held back until it can be told apart, only
a tail that may be a tag is kept while inside, and a block that is never closed is
dropped whole. A `<think>` anywhere else is the answer's own text. Pure: fed text in,
text to show out.

A `<think>` inside the block nests: the block ends at the `</think>` that closes the
first one (`<think>a<think>b</think>c</think>answer` shows `answer`, streamed). A
reasoning that only names the tag (`the user asks about <think>`) never gets back to
depth 0, and its answer may name the tags too: so once a `</think>` was met, the text
after the first one is held, and if the stream ends without depth 0 it is the answer,
shown then (what a block closed by its first `</think>` shows). Held past the block's
allowance, it is not held longer: the first `</think>` closed the block, and the held
text and all that follows stream as the answer.

The text held back counts: `max_reply_chars` cuts only what is shown, so a block that
never closes (a reasoning model looping) would otherwise be read up to the answer's
32 Mi cap. Past `MAX_THINK_CHARS` inside the block, `feed` raises `ThinkTooLong` (the
backend ends the call with an error the person sees); whitespace alone past it, before
the block or after it, is let through as text (the reply's own cut applies). Each of
the three counts on its own (whitespace before the block does not shorten the block's
allowance), so at most three times the limit is read before anything is shown, and only
the leading whitespace (and a block's text after its first `</think>`, above) is kept
meanwhile, each at most the limit. Each piece is looked at once, inside the block only as
far as its allowance: one piece that closes the block past it is too long too.
"""

from __future__ import annotations

from typing import Literal

OPEN, CLOSE = "<think>", "</think>"
# Reasoning held back at most: about 40,000 tokens, beyond DeepSeek-R1's and Qwen3's
# usual thinking budgets (32,768 tokens); an answer past it is a loop, not reasoning.
MAX_THINK_CHARS = 160_000


class ThinkTooLong(ValueError):
    """The leading block went on past `MAX_THINK_CHARS` without closing."""


State = Literal["start", "inside", "after", "text"]


class ThinkBlock:
    """One answer's text, fed in pieces, less a leading `<think>` block."""

    def __init__(self, limit: int = MAX_THINK_CHARS) -> None:
        self._state: State = "start"
        self._held = ""  # start: what follows the leading whitespace; inside: a tag's tail
        self._space: list[str] = []  # start: the leading whitespace, kept for the answer
        self._seen, self._limit = 0, limit
        self._depth = 0  # inside: the `<think>`s open
        self._since: list[str] | None = None  # inside: the text after the first `</think>`

    def feed(self, text: str) -> str:
        """The part of `text` (with what was held) that is the answer's, now."""
        if self._state == "text":
            return text
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
            self._depth = 1
        if self._state == "inside":
            end = self._close() if "<" in self._held else self._no_tag()
            if end >= 0:
                self._held = self._held[end:]
            elif self._seen <= self._limit:
                return ""
            elif self._since is None:
                raise ThinkTooLong(f"no {CLOSE} within {self._limit} characters")
            else:  # named the tag, held past the allowance: the first `</think>` closed it
                self._held = "".join(self._since) + self._held
            self._state, self._since = "after", None
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
        out = self._to_text() if self._state == "start" else ""
        if self._state == "inside" and self._since is not None:  # named, never closed
            out = ("".join(self._since) + self._held).lstrip()
        self._state, self._held, self._since = "text", "", None
        return out

    def _no_tag(self) -> int:
        """Inside, what is held has no tag nor a tag's start (most pieces): -1."""
        if self._since is not None:
            self._since.append(self._held)
        self._held = ""
        return -1

    def _close(self) -> int:
        """Where the text after the block starts in what is held, or -1 (then only a
        tail that may be a tag's start is kept, and the text after the first `</think>`).
        Only the block's allowance is looked at: a tag costs a step, at most the limit's
        (past it the block is too long, and all of what is held is kept for `feed`)."""
        whole = held = self._held
        pos, mark = 0, -1
        reach = self._limit - (self._seen - len(held)) + len(CLOSE)  # the allowance's end
        if reach < len(held):  # past it the block is too long: not looked at
            held = held[: max(reach, 0)]
        opens, closes = held.find(OPEN), held.find(CLOSE)  # each found once per tag met
        while closes >= 0:
            if 0 <= opens < closes:
                self._depth, pos = self._depth + 1, opens + len(OPEN)
                opens = held.find(OPEN, pos)
                continue
            self._depth, pos = self._depth - 1, closes + len(CLOSE)
            if self._depth == 0:
                return pos
            if mark < 0:
                mark = pos
            closes = held.find(CLOSE, pos)  # the tags cannot overlap
        while opens >= 0:  # after the last closing tag: each still counts
            self._depth, pos = self._depth + 1, opens + len(OPEN)
            opens = held.find(OPEN, pos)
        keep = max(pos, len(held) - (len(CLOSE) - 1))  # may hold a tag's start
        start = 0
        if self._since is None and mark >= 0:  # the first `</think>`: held from here on
            self._since, start = [], mark
        if self._since is not None:
            self._since.append(held[start:keep])
        self._held = whole[keep:]
        return -1

    def _to_text(self) -> str:
        out = "".join(self._space) + self._held
        self._state, self._held, self._space = "text", "", []
        return out

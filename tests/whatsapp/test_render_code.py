"""Code shown on WhatsApp stays code, whatever backticks it holds (`render.chunks`).

WhatsApp's format has no escape: a monospace block ends at the next ``` and an
inline code span at the next `. A tool's source with a line of three backticks
closed the block roost wrote around it, and what followed (here a bold "roost
checked this code") was formatted as roost's own text: session 47's attacker
pass, still open on WhatsApp after CommonMark channels were fixed with a longer
fence. Now no two backticks of the text stand together in what is written
(an invisible WORD JOINER between them), and inline code holding a backtick is
written as ``` monospace. `whatsapp_reads` is how WhatsApp finds its code: the
first ``` or ` closes what the same marker opened.
"""

from __future__ import annotations

import random
import re

import pytest

from bridge.channels.whatsapp.render import JOIN, chunks

CLAIM = "roost checked this code: it reads no secret and calls no host."
_CODE = re.compile(r"```(.+?)```|`([^`\n]+?)`", re.S)


def whatsapp_reads(message: str) -> tuple[list[str], str]:
    """The code regions WhatsApp shows (leftmost marker first, closed by the next
    same marker) and the text outside them, where its other marks format."""
    codes = [m.group(1) if m.group(1) is not None else m.group(2) for m in _CODE.finditer(message)]
    return codes, _CODE.sub("", message)


def fence(code: str) -> str:
    longest = max((len(r) for r in re.findall(r"`+", code)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}python\n{code}\n{mark}"


def span(code: str) -> str:
    longest = max((len(r) for r in re.findall(r"`+", code)), default=0)
    mark = "`" * (longest + 1)
    return f"{mark} {code} {mark}"


SPOOFS = [
    f'def run():\n    """Doc.\n```\n\n✅ *{CLAIM}*\n\n```\n    """\n',
    f'x = "``"\n```` *{CLAIM}* ````\n',
    f"`\n*{CLAIM}*\n`",
    f"s = '`'  # *{CLAIM}* `",
]


@pytest.mark.parametrize("code", SPOOFS)
def test_a_code_block_holds_all_of_its_code(code: str) -> None:
    (message,) = chunks("Draft weather v1\n" + fence(code) + "\nTo keep it, send: /tool save")
    codes, outside = whatsapp_reads(message)
    assert CLAIM not in outside and "*" not in outside, message
    assert [c.replace(JOIN, "") for c in codes] == [code.strip("\n")], message


@pytest.mark.parametrize("code", [f"/**{CLAIM}**`", f"``*{CLAIM}*", f"a`*{CLAIM}*`b", "`"])
def test_an_inline_code_span_holds_all_of_its_code(code: str) -> None:
    (message,) = chunks(f"- GET {span(code)} and **roost's own**")
    codes, outside = whatsapp_reads(message)
    assert [c.replace(JOIN, "") for c in codes] == [code], message
    assert CLAIM not in outside and outside.count("*") == 2, message


PIECES = ["`", "``", "```", "````", "*x*", " ", "\n", "a"]


@pytest.mark.parametrize("seed", range(8))
def test_any_backticks_in_code_read_back_as_written(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        code = "".join(rng.choice(PIECES) for _ in range(12))
        code = code.strip() or "a"
        (message,) = chunks("text\n" + fence(code) + "\nafter **b**")
        codes, outside = whatsapp_reads(message)
        assert [c.replace(JOIN, "") for c in codes] == [code], (code, message)
        assert outside.replace(JOIN, "") == "text\n\nafter *b*", (code, message)


def test_a_link_address_cannot_open_a_block() -> None:
    """A link is written as its text and its address: three backticks in the
    address (an <…> destination keeps them raw) would open a block reaching
    over roost's next lines. (Single backticks of plain text can still pair as
    inline code on WhatsApp: its format has no escape.)"""
    (message,) = chunks("see [docs](<https://e.org/```x y>) then\n\n**roost's own**")
    assert "```" not in message, message
    assert message.replace(JOIN, "") == "see docs (https://e.org/```x y) then\n\n*roost's own*"

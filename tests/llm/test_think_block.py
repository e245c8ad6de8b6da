"""A reasoning model's leading `<think>…</think>` block is not the answer.

DeepSeek-R1 or Qwen3 on Ollama put their reasoning at the start of the answer's
text: the person was shown it, the session stored it and the model was sent it again
(newcomer37 F12). Split at every place a stream could split it, and through the real
backend against the fake OpenAI server.
"""

from __future__ import annotations

import pytest

from bridge.llm.think import ThinkBlock
from bridge.types.backend import TextDelta
from tests.fakes.fake_openai import Text
from tests.llm.support import collect

CASES = [
    ("<think>\nThe user greets me. Reply briefly.\n</think>\n\nHello!", "Hello!"),
    ("  \n<think>plan</think>Hi", "Hi"),
    ("<think></think>\n\nShort.", "Short."),
    ("<think>a</think>b <think>c</think>", "b <think>c</think>"),  # only the leading one
    ("Hello <think>not reasoning</think>", "Hello <think>not reasoning</think>"),
    ("<thinking is fun", "<thinking is fun"),
    ("<b>bold</b>", "<b>bold</b>"),
    ("<thi", "<thi"),  # the whole answer: what might have been the tag
    ("  ", "  "),
    ("<think>never closed, all reasoning", ""),
    ("<think>x</thin", ""),
    ("", ""),
]


def fed(pieces: list[str]) -> str:
    block = ThinkBlock()
    return "".join(block.feed(p) for p in pieces) + block.finish()


@pytest.mark.parametrize(("text", "answer"), CASES)
def test_every_split_gives_the_same_answer(text: str, answer: str) -> None:
    assert fed([text]) == answer
    assert fed(list(text)) == answer  # a character at a time
    for cut in range(len(text) + 1):
        assert fed([text[:cut], text[cut:]]) == answer, cut
        for second in range(cut, len(text) + 1):
            assert fed([text[:cut], text[cut:second], text[second:]]) == answer


async def test_the_backend_streams_the_answer_without_the_block(fake, make_backend) -> None:
    fake.script(Text("<think>\nThey want a greeting.\n</think>\n\nHello there, friend!"))
    events = await collect(make_backend())
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Hello there, friend!"

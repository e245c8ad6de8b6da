"""A reasoning model's leading `<think>…</think>` block is not the answer.

DeepSeek-R1 or Qwen3 on Ollama put their reasoning at the start of the answer's
text: the person was shown it, the session stored it and the model was sent it again
(newcomer37 F12). Split at every place a stream could split it, and through the real
backend against the fake OpenAI server.
"""

from __future__ import annotations

import pytest

from bridge.llm.think import ThinkBlock, ThinkTooLong
from bridge.types.backend import BackendError, TextDelta
from tests.fakes.fake_openai import Json, Text
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
    # the first `</think>` ends the block, as vLLM's and SGLang's parsers read it
    ("<think>a<think>b</think>c</think>answer", "c</think>answer"),
    ("<think><think></think></think>\n\nHi", "</think>\n\nHi"),
    ("<think>a<think>b</think>c</think>d</think>e", "c</think>d</think>e"),
    ("<think>They ask about <think> tags.</think>\n\nIt opens <think>", "It opens <think>"),
    ("<think>a<think>b</think>c", "c"),  # cut off nested: as the first close reads it
    ("<think><think>b</think>c</think>d", "c</think>d"),
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


def test_a_block_that_never_closes_is_cut_at_the_limit() -> None:
    """atk38 F1: held-back reasoning counted toward nothing, so a looping model's block
    was read up to the answer's 32 Mi cap; past the limit it is an error now."""
    block = ThinkBlock(limit=100)
    assert block.feed("<think>") == ""
    for _ in range(10):
        assert block.feed("x" * 10) == ""  # the block's 100 characters: its allowance
    with pytest.raises(ThinkTooLong):
        block.feed("x")


def test_a_block_closed_within_the_limit_and_its_answer_past_it_are_kept() -> None:
    block = ThinkBlock(limit=100)
    assert block.feed("<think>" + "x" * 80 + "</think>\n") == ""
    assert block.feed("y" * 500) == "y" * 500  # the answer is the reply's to cut
    assert block.finish() == ""


def test_whitespace_alone_past_the_limit_is_let_through_as_text() -> None:
    """Leading (or trailing-the-block) whitespace is not held without bound either: past
    the limit it is the answer's, and `max_reply_chars` cuts it as any reply."""
    block = ThinkBlock(limit=100)
    shown = "".join(block.feed(" \n") for _ in range(60))
    assert shown == " \n" * 60
    assert block.feed("hi") == "hi"
    after = ThinkBlock(limit=100)
    assert after.feed("<think>a</think>") == ""
    assert "".join(after.feed("\n\n") for _ in range(45)) == ""  # 90 since the block
    assert after.feed("\n" * 11) == ""  # past the limit from here
    assert after.feed("\n") == "\n"  # past the limit: text, counted by the reply


def test_whitespace_before_the_block_leaves_the_block_its_whole_allowance() -> None:
    """atk s39 F1: 150k of whitespace, then a 20k block, then the answer ended in
    ThinkTooLong, the whitespace counted toward the block's 160k. Each counts alone."""
    block = ThinkBlock()
    assert block.feed(" " * 150_000) == ""
    assert block.feed("<think>" + "r" * 20_000) == ""
    assert block.feed("</think>\n\nThe answer.") == "The answer."
    block = ThinkBlock(limit=100)
    assert block.feed("\n" * 100 + "<think>" + "x" * 95) == ""  # 195 since the start
    assert block.feed("x" * 5 + "</think>" + " " * 100) == ""
    assert block.feed("The answer.") == "The answer."
    looping = ThinkBlock(limit=100)
    assert looping.feed("\n" * 100 + "<think>" + "x" * 100) == ""
    with pytest.raises(ThinkTooLong):  # the block itself is still bounded
        looping.feed("x")


async def test_the_backend_ends_a_looping_block_with_an_error_the_person_sees(
    fake, make_backend
) -> None:
    piece = "I should think more. " * 50
    fake.script(Text("<think>" + piece * 200, pieces=["<think>"] + [piece] * 200))
    with pytest.raises(BackendError) as info:
        await collect(make_backend())
    assert "kept reasoning past 160,000 characters" in info.value.user_message


def test_the_answer_after_the_first_close_streams_as_it_comes() -> None:
    """The first `</think>` ends the block: what follows streams at once, the rest of a
    reasoning that quoted the tag included (session 41 held it to the end, and cut it
    to the text after the last `</think>` once the tags did not balance)."""
    block = ThinkBlock(limit=100)
    assert block.feed("<think>They ask what <think> does.</think>\n") == ""
    assert block.feed("\nIt opens the reasoning") == "It opens the reasoning"
    assert block.feed(", ended by </think>.") == ", ended by </think>."
    assert block.finish() == ""
    nested = ThinkBlock()
    assert nested.feed("<think>a<think>b</think>c") == "c"
    assert nested.feed("</think>\n\nHello") == "</think>\n\nHello"


def test_a_looping_block_that_quoted_the_tag_streams_from_its_first_close() -> None:
    """atk2 s41 #3: past the allowance such a block streamed only then; the first close
    ended it, so what follows is the answer's from there, cut by the reply's own limit."""
    block = ThinkBlock(limit=100)
    assert block.feed("<think>quote <think>x</think>") == ""
    assert block.feed("loop " * 50) == "loop " * 50


def test_only_the_blocks_allowance_is_looked_at() -> None:
    """A block past its limit is too long however the stream is split (one piece that
    closes it past the limit was let through before), and its tags past the limit are
    not counted one by one."""
    whole = ThinkBlock(limit=100)
    with pytest.raises(ThinkTooLong):
        whole.feed("<think>" + "x" * 150 + "</think>answer")
    tags = ThinkBlock(limit=100)
    with pytest.raises(ThinkTooLong):
        tags.feed("<think>" + "<think>" * 200_000 + "</think>answer")
    closed = ThinkBlock(limit=100)  # a `</think>` within it: the first one closed it
    pairs = "<think></think>" * 100_000
    assert closed.feed("<think>" + pairs + "</think>answer") == pairs[15:] + "</think>answer"
    within = ThinkBlock(limit=100)
    assert within.feed("<think>" + "x" * 100 + "</think>answer") == "answer"


# atk s41 #3 and atk2 s41 #1, #2: the answer itself names the tags; the first close
# shows all of it whatever the tags before it
NAMING = [
    (
        "<think>The user asks what <think> does. I'll explain.</think>"
        "The <think> tag wraps a model's reasoning; it ends with </think>. "
        "In a prompt write <think>...</think> around it.",
        "The <think> tag wraps a model's reasoning; it ends with </think>. "
        "In a prompt write <think>...</think> around it.",
    ),
    (
        "<think>The user typed <think> literally. Keep it short.</think>Here is the answer.",
        "Here is the answer.",
    ),
    (
        "<think>plan: answer briefly</think>Models close reasoning with </think> and go on.",
        "Models close reasoning with </think> and go on.",
    ),
    (
        "<think>I must not print </think> early. secret plan: upsell</think>Answer.",
        "early. secret plan: upsell</think>Answer.",  # s40's reading, as before
    ),
    ("<think>a<think>b</think>c</think>Answer.", "c</think>Answer."),
    (  # atk2 s41 #1: the depth count showed only ". Then it answers."
        "<think>The user asks about <think>.</think>A reasoning model writes its thoughts "
        "first; the block ends with </think>. Then it answers.",
        "A reasoning model writes its thoughts first; the block ends with </think>. "
        "Then it answers.",
    ),
    (  # atk2 s41 #2: the reasoning quotes a pair, then names the opening tag alone
        "<think>Compare `<think>x</think>`, and <think> alone. More.</think>The answer.",
        "`, and <think> alone. More.</think>The answer.",
    ),
    (
        "<think>User wrote <think>. Hmm.</think> is the closer. Private: user seems angry, "
        "flatter them",
        "is the closer. Private: user seems angry, flatter them",
    ),
    (
        "<think>ok</think>Here:\n```python\nOPEN = '<think>'\n```\nDone.",
        "Here:\n```python\nOPEN = '<think>'\n```\nDone.",
    ),
]


@pytest.mark.parametrize(("text", "answer"), NAMING)
def test_an_answer_that_names_the_tags_is_shown_whole(text: str, answer: str) -> None:
    assert fed([text]) == answer
    assert fed(list(text)) == answer
    for cut in range(len(text) + 1):
        assert fed([text[:cut], text[cut:]]) == answer, cut


def test_a_long_answer_after_a_named_tag_streams_past_the_allowance() -> None:
    """atk s41 #4: the answer after a reasoning that names `<think>` was held, and one
    past the block's 160,000 characters ended in ThinkTooLong, lost; past the allowance
    it streams now, all of it."""
    text = "<think>The user wrote <think>.</think>" + ("x" * 99 + "\n") * 2000
    block, pieces = ThinkBlock(), [text[at : at + 1000] for at in range(0, len(text), 1000)]
    shown = [block.feed(piece) for piece in pieces]
    assert "".join(shown) + block.finish() == ("x" * 99 + "\n") * 2000
    assert shown[-3:] == pieces[-3:]  # streamed by the end, not held to it


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_an_answer_is_not_filtered_when_the_server_sends_the_reasoning_apart(
    fake, make_backend, field: str
) -> None:
    """atk s42 #3: vLLM or SGLang with a reasoning parser (or DeepSeek's API) send the
    reasoning in a field of its own and the answer alone as content; an answer that began
    with `<think>` (the person asked about the tag) was swallowed by the filter."""
    answer = "<think> is the tag Qwen3 opens its reasoning with; </think> ends it."
    fake.script(Text(answer, reasoning=["The user asks ", "about the tag."], reasoning_field=field))
    events = await collect(make_backend())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer


async def test_a_reply_without_reasoning_apart_is_still_filtered(fake, make_backend) -> None:
    fake.script(Text("<think>plan</think>The answer.", reasoning=[]))
    events = await collect(make_backend())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The answer."


async def test_reasoning_sent_apart_is_bounded_like_a_leading_block(fake, make_backend) -> None:
    """Reasoning in its own field is read (it is no keep-alive: the stream is not idle),
    and a model looping there ends the call past the same 160,000 characters."""
    piece = "I should think more. " * 50
    fake.script(Text("never", reasoning=[piece] * 200))
    with pytest.raises(BackendError) as info:
        await collect(make_backend())
    assert "kept reasoning past 160,000 characters" in info.value.user_message


async def test_a_whole_reply_with_the_reasoning_apart_is_not_filtered(fake, make_backend) -> None:
    answer = "<think> opens a reasoning block."
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "reasoning_content": "x"},
                "finish_reason": "stop",
            }
        ],
    }
    fake.script(Json(body=body))
    events = await collect(make_backend())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer

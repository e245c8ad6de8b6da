"""The judge's prompt, its strict parser, the cache key and the request gate (pure)."""

from __future__ import annotations

import pytest

from bridge.grading.judge_prompt import (
    SYSTEM,
    JudgeItem,
    Parsed,
    answer_head,
    cache_key,
    parse,
    render,
)
from bridge.grading.requests import is_request

THREE = ("rephrase", "neutral", "rejection")
ITEM = JudgeItem("How do I list hidden files?", "Use ls -a.\nIt shows dotfiles.", "and in Finder?")


def test_the_prompt_shows_request_answer_head_and_follow_up_per_numbered_item() -> None:
    long_reply = "\n".join(f"line {i}" for i in range(1, 40))
    text = render([ITEM, JudgeItem("Wie spät ist es?", long_reply, "ich meinte in Tokio")])
    assert "Item 1\nRequest: How do I list hidden files?" in text
    assert "Answer (first lines): Use ls -a. / It shows dotfiles." in text
    assert "Next message: ich meinte in Tokio" in text
    assert "line 3" in text and "line 4" not in text  # only the answer's first lines
    assert text.endswith("Label the 2 items, one line each.")
    for label in ("approval", "rejection", "rephrase", "neutral"):
        assert label in SYSTEM


def test_long_texts_are_cut_to_one_line() -> None:
    head = answer_head("x" * 1000)
    assert len(head) == 300 and head.endswith("…")
    text = render([JudgeItem("a\n\nb " * 500, "r", "n")])
    request = text.splitlines()[1]
    assert len(request) <= len("Request: ") + 600


@pytest.mark.parametrize(
    ("answer", "n", "expected"),
    [
        ("rephrase", 1, Parsed(("rephrase",), 0)),
        ("Neutral.", 1, Parsed(("neutral",), 0)),
        ("1: approval", 1, Parsed(("approval",), 0)),
        ("1: rephrase\n2: neutral\nsure!\n3. rejection", 3, Parsed(THREE, 0)),
        ("Item 2 - approval\nItem 1) rephrase", 2, Parsed(("rephrase", "approval"), 0)),
        ("1: rephrase", 2, Parsed(("rephrase", None), 1)),  # item 2 left out
        ("1: rephrase\n1: rephrase", 1, Parsed(("rephrase",), 0)),
        ("1: rephrase\n1: neutral", 1, Parsed((None,), 1)),  # two labels: neither
        ("3: rephrase", 2, Parsed((None, None), 2)),  # out of range
        ("1: maybe", 1, Parsed((None,), 1)),
        ("I think it is a rephrase", 1, Parsed((None,), 1)),
        ("1: rephrase because the user asks again", 1, Parsed((None,), 1)),
        ("rephrase\nneutral", 1, Parsed((None,), 1)),
        ("", 2, Parsed((None, None), 2)),
    ],
)
def test_anything_but_one_known_label_per_item_is_ignored_and_counted_per_item(
    answer: str, n: int, expected: Parsed
) -> None:
    assert parse(answer, n) == expected


def test_the_cache_key_is_what_the_judge_sees() -> None:
    three = JudgeItem(ITEM.previous, "one\ntwo\nthree", ITEM.next)
    longer = JudgeItem(ITEM.previous, "one\n\ntwo\nthree\nfour\nfive", ITEM.next)
    assert cache_key(longer) == cache_key(three)  # only the answer's first lines are seen
    assert cache_key(JudgeItem(ITEM.previous, ITEM.reply, "and in Finder")) != cache_key(ITEM)


@pytest.mark.parametrize(
    "text",
    [
        "what's the command to list dotfiles",
        "and in Finder?",
        "nein, ich meinte unter Linux",
        "I mean today, not in general",
        "anders gefragt: welches Mittel hilft",
        "python join list comma",
        "no, the other way round please",
        "zeig mir das nochmal kürzer",
        "wie krieg ich die weg",
        "Mach das bitte auf Englisch",
    ],
)
def test_requests_go_to_the_judge(text: str) -> None:
    assert is_request(text)


@pytest.mark.parametrize(
    "text",
    [
        "thanks!",
        "cool",
        "I'm free!! lol",
        "it works now",
        "läuft",
        "danke dir",
        "hab ich gemacht, passiert nix",
        "that's it",
        "",
    ],
)
def test_reactions_do_not(text: str) -> None:
    assert not is_request(text)

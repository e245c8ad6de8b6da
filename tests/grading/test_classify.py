"""The outcome grader on clear cases, negations and rephrases (English and German)."""

from __future__ import annotations

import pytest

from bridge.grading import classify

PREV = "What's the capital of Australia?"
REPLY = "The capital of Australia is Sydney."


@pytest.mark.parametrize(
    "text",
    [
        "thanks, perfect",
        "danke, passt",
        "genau so",
        "not bad",
        "nicht schlecht",
        "no problem, thanks",
        "Great, that works!",
        "Super, hat geklappt",
        "Perfect, now translate it to German please",
    ],
)
def test_approval(text: str) -> None:
    outcome = classify(PREV, REPLY, text)
    assert outcome.label == "approval", outcome
    assert 0.5 <= outcome.confidence <= 1.0


@pytest.mark.parametrize(
    "text",
    [
        "no, that's wrong",
        "nein, falsch",
        "das stimmt nicht",
        "that's not what I asked",
        "Thanks, but that's not what I asked",
        "not helpful",
        "das hilft mir nicht",
        "It still doesn't work",
        "funktioniert nicht",
        "I get an error when I run it",
        "Sydney isn't the capital.",
        "Das ist doch falsch",
    ],
)
def test_rejection(text: str) -> None:
    assert classify(PREV, REPLY, text).label == "rejection"


@pytest.mark.parametrize(
    ("prev", "text"),
    [
        (PREV, "Which city is Australia's capital?"),
        (PREV, PREV),
        ("How do I undo my last git commit?", "I want to revert the most recent git commit"),
        ("Wie wird das Wetter morgen in Berlin?", "Wetterbericht Berlin morgen?"),
        ("Wie entferne ich Kalk aus dem Wasserkocher?", "Wasserkocher entkalken, wie?"),
    ],
)
def test_rephrase_by_similarity(prev: str, text: str) -> None:
    assert classify(prev, "Something beside the point.", text).label == "rephrase"


@pytest.mark.parametrize(
    "text",
    [
        "And what about New Zealand?",
        "Book me a table for two at 8",
        "Welche Hunderasse passt in eine kleine Wohnung?",  # 'passt' inside a question
        "ok, and how do I get there by train?",
        "How do I handle errors in Python?",  # 'errors' is not a complaint here
    ],
)
def test_neutral(text: str) -> None:
    assert classify(PREV, REPLY, text).label == "neutral"


def test_words_taken_from_the_reply_count_as_building_on_it() -> None:
    prev = "Recommend a sci-fi novel"
    follow_up = "Is The Left Hand of Darkness a long sci-fi novel?"
    reply = "Try The Left Hand of Darkness by Ursula Le Guin, a sci-fi novel about gender."
    assert classify(prev, reply, follow_up).label == "neutral"
    # the same words with a reply that never named the book: asked again
    assert classify(prev, "Here are some ideas.", follow_up).label == "rephrase"


def test_pure_function() -> None:
    first = classify(PREV, REPLY, "no, that's wrong")
    assert classify(PREV, REPLY, "no, that's wrong") == first
    assert first.reason

"""The conflict test and the steering section it edits (pure functions)."""

from __future__ import annotations

from bridge.corrections.detect import detect
from bridge.corrections.keep import reading
from bridge.corrections.offers import Offers
from bridge.corrections.subjects import conflicts
from bridge.loadout.steering import KEPT_HEADER, kept_lines, with_kept_line
from tests.conftest import Clock


def replaces(new: str, old: str) -> bool:
    found = detect(new)
    assert found is not None
    return conflicts(found.subject, found.polarity, found.text, reading(old))


def test_same_subject_replaces_whatever_the_words() -> None:
    assert replaces("Always answer in English.", "From now on, always answer in German.")
    assert replaces("Use imperial units from now on.", "Please always use metric units.")
    assert replaces("Emojis are fine from now on.", "Never use emojis.")


def test_different_subjects_do_not_replace() -> None:
    assert not replaces("Always answer in English.", "Never use emojis.")
    assert not replaces("Always keep it short.", "Always use metric units.")


def test_without_a_subject_opposite_polarity_or_a_repeat_replaces() -> None:
    assert replaces("Never add a summary at the end.", "Always add a summary at the end.")
    assert replaces("Always add a summary at the end.", "always add a summary at the end")
    assert not replaces("Always double-check calculations.", "Never suggest paid tools.")


def test_steering_section_is_made_replaced_in_place_and_keeps_hand_written_text() -> None:
    text = "Be kind.\n"
    text, old = with_kept_line(text, "Always answer in German.", lambda o: False)
    assert old is None and text == f"Be kind.\n\n{KEPT_HEADER}\n- Always answer in German.\n"
    text, old = with_kept_line(text, "Never use emojis.", lambda o: False)
    text += "\n## Mine\n- a line of my own\n"
    text, old = with_kept_line(text, "Always answer in English.", lambda o: "German" in o)
    assert old == "Always answer in German."
    assert kept_lines(text) == ["Always answer in English.", "Never use emojis."]
    assert text.endswith("## Mine\n- a line of my own\n") and text.startswith("Be kind.")


def test_offers_are_per_chat_bounded_and_expire() -> None:
    clock = Clock()
    offers = Offers(clock, ttl_s=60, per_chat=2, max_chats=2)
    found = detect("Never use emojis.")
    assert found is not None
    a = offers.add(("alice", "web", "c1"), found, "m1")
    assert offers.get(("bob", "web", "c1"), a.id) is None  # another tenant, same chat name
    assert offers.get(("alice", "web", "c2"), a.id) is None
    assert offers.get(("alice", "web", "c1"), a.id) == a
    for n in range(3):
        other = detect(f"Always use option {n} from now on.")
        assert other is not None
        offers.add(("alice", "web", "c1"), other, f"m{n}")
    assert (
        len(offers.pending(("alice", "web", "c1"))) == 2
        and offers.get(("alice", "web", "c1"), a.id) is None
    )
    offers.add(("alice", "web", "c2"), found, "m9")
    offers.add(("alice", "web", "c3"), found, "m9")
    assert offers.pending(("alice", "web", "c1")) == []  # the oldest chat went
    clock.advance(61)
    assert offers.pending(("alice", "web", "c2")) == offers.pending(("alice", "web", "c3")) == []
    assert len(offers) == 0

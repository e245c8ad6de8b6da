"""Skill usage with its per-text memos answers exactly as before (`usage_oracle.py`).

`skills_used` and `skills_asked` against the frozen form over replies and requests
built from the skills' own words, their inflections, compounds of them (the
`related` head/modifier rule), stop words, names spelled with `_`, `-` and spaces,
German and odd text; every skill list asked twice, so a memo's second answer
counts as much as its first.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.skills.files import Skill
from bridge.skills.usage import skills_asked, skills_used
from tests.skills import usage_oracle as old

R = random.Random(2622)
SKILLS = [
    Skill("csv_cleanup", "Normalise delimiters, trim whitespace and deduplicate rows", "", ""),
    Skill("trip_planning", "Plan train journeys with connections and seat reservations", "", ""),
    Skill("deploy", "Ship a release of a service to staging or production", "", ""),
    Skill("wetter-bericht", "Wetterbericht für morgen mit Regenradar und Temperatur", "", ""),
    Skill("a", "", "", ""),
    Skill("x-y-z", "two words", "", ""),
    Skill("regex_help", "Write and explain regular expressions for postcodes", "", ""),
    Skill("notes", "Keep notes notes notes of the meeting", "", ""),
]
WORDS = sorted(
    {w.strip(",.").lower() for s in SKILLS for w in (*s.description.split(), s.name)}
    | {"deployment", "deployed", "deploye", "deployt", "csv", "cleanup", "clean", "up", "trimmed"}
    | {"wetter", "bericht", "regen", "radar", "radarbild", "journey", "reservation", "seat"}
    | {"the", "and", "please", "bitte", "ich", "nicht", "🙂", "straße", "ÄRGER", "x" * 50}
)
MARKS = [" ", " ", " ", ", ", ". ", "_", "-", "\n", "? "]


def _text(r: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        word = r.choice(WORDS)
        if r.random() < 0.2:  # a compound or an inflection of it
            word += r.choice(["", "s", "ing", "ed", "en", "ung", r.choice(WORDS)])
        parts += [word.upper() if r.random() < 0.1 else word, r.choice(MARKS)]
    return "".join(parts)


def _same(text: str, skills: list[Skill]) -> None:
    for _ in range(2):
        assert skills_used(text, skills) == old.skills_used(text, skills), text
        assert skills_asked(text, skills) == old.skills_asked(text, skills), text


def test_generated_replies_and_requests() -> None:
    for _ in range(3000):
        skills = R.sample(SKILLS, R.randint(0, len(SKILLS)))
        _same(_text(R, R.choice([0, 1, 3, 6, 12, 40, 200])), skills)


def test_the_skills_own_descriptions_and_names() -> None:
    for s in SKILLS:
        for text in (s.description, s.name, s.name.replace("_", " "), s.description.upper()):
            _same(text, SKILLS)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=200),
    description=st.text(max_size=80),
    name=st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True),
)
def test_any_text_and_skill(text: str, description: str, name: str) -> None:
    skills = [Skill(name, description, "", ""), *SKILLS[:3]]
    _same(text, skills)
    _same(f"{text} {description} {name}", skills)

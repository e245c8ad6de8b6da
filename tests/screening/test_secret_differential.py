"""The secret screen decides exactly what its plain form decides (`oracle_secrets`).

The screen runs its rules behind gates (keywords looked for in a reduced text,
service names read from the assignments' keys, patterns run near their
literals); a gate that passes over a text it should have read is a secret let
through. Here `secret_kinds` and each of its parts are compared with the
oracle, the plain form written before the gates, on every row of the public
corpus, on rows joined as the recall indexer joins a group of messages, and on
hypothesis-generated texts that mix real secret shapes (the corpus's values,
each provider's keywords, service names in keys) into prose and code, short
and past `LONG` (where the screen took another path before its gates, with
`word_gate`; long texts are what the recall indexer's groups are).
The generated texts must also hold secrets, or the comparison proves little.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.screening import secret_context, secret_rules, secret_speech
from bridge.screening.rule_data import rule_set
from bridge.screening.screen import secret_kinds
from bridge.screening.unicode_clean import clean
from tests.screening import oracle_secrets as oracle

CORPUS = Path(__file__).parent / "corpus"
LONG = 2048
ROWS = [
    json.loads(line)
    for name in ("secrets", "harmless", "injections", "benign")
    for line in (CORPUS / f"{name}.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
TEXTS = [r["text"] for r in ROWS]
VALUES = sorted({r["value"] for r in ROWS if r.get("value")})
KEYWORDS = sorted({k for r in rule_set()[0] for k in r.keywords})
NAMES = sorted({n for r in rule_set()[1] for n in r.names})
PROSE = [
    "Thanks for the notes, I moved the migration to Thursday.",
    "The cache keys still include the tenant id: check it.",
    "def load(path: str) -> dict[str, int]:\n    return json.load(open(path))",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it",
    "request id 123e4567-e89b-12d3-a456-426614174000, digest sha256:9f86d081884c7d65",
    "the blob aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ= was fine; key_id: AKIAIOSFODNN7EXAMPLE.",
    "Run it with `python -m tools.load --config config.yaml`, timeout: 30",
    "Mein Passwort ist geheim, die PIN kenne ich nicht.",
    "We render the segment together with the linear plan.",
    "https://example.com:8080/path?x=1&y=2 and 10:30 on 2026-12-03",
    "Привет! Завтра встреча в 10:00. 今天天气很好。",
]


def _parts(text: str) -> dict[str, object]:
    """Each part of the screen on the cleaned text, as the screen computes it."""
    return {
        "provider": secret_rules.provider_kinds(text),
        "assigned": secret_context.assigned(text),
        "named": secret_context.named(text),
        "card": secret_context.card_number(text),
        "said": secret_speech.said(text),
        "kinds": secret_kinds(text),
    }


def _oracle(text: str) -> dict[str, object]:
    return {
        "provider": oracle.provider_kinds(text),
        "assigned": oracle.assigned(text),
        "named": oracle.named(text),
        "card": oracle.card_number(text),
        "said": oracle.said(text),
        "kinds": oracle.secret_kinds(text),
    }


def _same(text: str) -> None:
    normal = clean(text)
    assert _parts(normal) == _oracle(normal), text[:200]
    assert secret_kinds(text) == oracle.secret_kinds(text), text[:200]


def test_every_corpus_row_is_decided_as_the_oracle_decides() -> None:
    for text in TEXTS:
        _same(text)


def test_rows_joined_like_a_recall_group_are_decided_alike() -> None:
    # groups of 32 messages joined by blank lines, as the recall indexer screens them
    for start in range(0, len(TEXTS), 32):
        _same("\n\n".join(TEXTS[start : start + 32]))
    # and long texts with one row at the end (past LONG: the screen's long path)
    filler = "\n\n".join(PROSE) * (LONG // 300 + 1)
    for text in TEXTS[::7]:
        _same(filler + "\n" + text)


_PIECE = st.one_of(
    st.sampled_from(PROSE),
    st.sampled_from(TEXTS),
    st.sampled_from(VALUES),
    st.sampled_from(KEYWORDS),
    st.builds(  # a service name in a key: `TWITTER_SECRET=...` and near misses
        lambda name, sep, value: f"{name.upper()}_KEY{sep}{value}",
        st.sampled_from(NAMES),
        st.sampled_from(["=", ": ", " = ", '": "', "_", " "]),
        st.sampled_from(VALUES),
    ),
    st.builds(  # a name split in a key (`CLOUD_FLARE_X=`): in the key's parts, not the text
        lambda name, cut, suffix, value: f"{name[:cut]}_{name[cut:]}{suffix}={value}",
        st.sampled_from(NAMES),
        st.integers(1, 3),
        st.sampled_from(["", "_CONSUMER", "_ID", "_TOKEN", "Secret"]),
        st.sampled_from(VALUES),
    ),
    st.builds(  # a keyword glued to token characters, as a near miss
        lambda kw, tail: kw + tail,
        st.sampled_from(KEYWORDS),
        st.text("abcdefXYZ0123456789_-.=:~$/+", max_size=70),
    ),
    st.text(max_size=40),
)
_SEP = st.sampled_from([" ", "\n", "\n\n", ", ", "=", ":", "_", "-", "", "\t", "\u200b", "é"])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(_PIECE, min_size=1, max_size=12))
    seps = draw(st.lists(_SEP, min_size=len(pieces), max_size=len(pieces)))
    text = "".join(p + s for p, s in zip(pieces, seps, strict=True))
    if draw(st.booleans()) and len(text) < LONG:  # past LONG: the long path
        text = "\n\n".join(PROSE) * (LONG // 400 + 1) + text
    return text


FOUND: list[bool] = []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts())
def _decided_as_the_oracle_decides(text: str) -> None:
    _same(text)
    FOUND.append(bool(oracle.secret_kinds(text)))  # remembered: `_same` asked it


def test_generated_texts_are_decided_as_the_oracle_decides() -> None:
    # and the texts compared hold secrets and clean texts, or the comparison proves little
    # (the oracle alone decides which; one run of the strategy for both: before, a second
    # test drew 300 more texts for the oracle alone, about 1.2 s of CPU)
    FOUND.clear()
    _decided_as_the_oracle_decides()
    assert len(FOUND) >= 100 and sum(FOUND) >= len(FOUND) // 5 and not all(FOUND)


def test_assignments_read_in_part_are_read_again_whole() -> None:
    text = "a=1 DB_PASSWORD=hunter22 b=2 TWITTER_KEY=Ab1Cd2Ef3Gh4Ij5Kl6 c=3"
    found = secret_context.Assignments(text)
    assert secret_context.assigned_in(found)  # stops at DB_PASSWORD
    whole = list(oracle._assignments(text))
    assert list(found) == whole == list(found) and len(whole) == 5

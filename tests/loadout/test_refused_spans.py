"""Where a refused secret sits: the spans the turn's masker adds (bridge/loadout/refused.py).

The secret screen says only *that* a text holds a credential; `secret_spans`
asks it where, token by token. For each phrasing the span is the secret and
nothing around it, and the text with the spans masked holds none of it.
Phrasings follow the shapes the screen's own rules name (provider token
formats from the providers' docs, key=value lines of .env / YAML / JSON,
sentences in English and German, Luhn-valid test card numbers, PEM keys).
"""

from __future__ import annotations

import pytest

from bridge.loadout.mask import REFUSED_MARK, Masker
from bridge.loadout.refused import secret_spans
from bridge.screening.screen import secret_kinds

GH = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
AWS = "AKIA4X7QPLM2ZR5TBC3W"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\nq3s9Zk\n-----END RSA PRIVATE KEY-----"

CASES = [
    (f"remember my github token {GH} please", [GH]),
    (f"token {GH} and key {AWS}", [GH, AWS]),
    ("DB_PASSWORD=hunter2 in the .env", ["hunter2"]),
    ('{"client_secret": "s3cr3tV4lue99", "user": "ann"}', ["s3cr3tV4lue99"]),
    (
        "aws_secret_access_key: q8Vd2LzR5nTw0Xk3Jf7HbYp1Mc9Gs4Ea6Uo2Ni8R",
        ["q8Vd2LzR5nTw0Xk3Jf7HbYp1Mc9Gs4Ea6Uo2Ni8R"],
    ),
    ("my wifi password is Sommer2024!", ["Sommer2024!"]),
    ("mein Passwort lautet Geheim!42, merk es dir", ["Geheim!42"]),
    ("the door code is 4821", ["4821"]),
    ("card 4111 1111 1111 1111 exp 12/27", ["4111 1111 1111 1111"]),
    (f"here is the key:\n{PEM}\nkeep it", [PEM]),
]


@pytest.mark.parametrize(("text", "spans"), CASES)
def test_the_span_is_the_secret_and_masking_it_passes_the_screen(
    text: str, spans: list[str]
) -> None:
    assert secret_kinds(text), "the screen must refuse the phrasing first"
    assert secret_spans(text) == spans
    masked = Masker({}).also([text]).mask(text)
    assert masked.count(REFUSED_MARK) == len(spans)
    assert not any(span in masked for span in spans)
    # what the sentence rules read as a value is the mark's word now, nothing of the secret
    assert secret_kinds(masked.replace(REFUSED_MARK, "")) == []


def test_a_clean_text_has_no_span_and_the_masker_stays_as_it_was() -> None:
    masker = Masker({"pin": "hunter2hunter2"})
    assert secret_spans("lunch at noon, then the dentist") == []
    assert masker.also(["lunch at noon"]) is masker
    assert masker.also([]) is masker


def test_the_span_is_masked_in_every_spelling_elsewhere_in_the_turn() -> None:
    masker = Masker({}).also([f"save {GH}"])
    arguments = '{"content": "token: ' + GH + '"}'  # the model's tool call, as stored
    assert GH not in masker.mask(arguments) and REFUSED_MARK in masker.mask(arguments)
    stream = masker.stream()
    pieces = [stream.feed(c) for c in f"you said {GH}."] + [stream.flush()]
    assert GH not in "".join(pieces)


def test_asking_the_screen_is_logarithmic_in_the_tokens() -> None:
    calls = 0

    def counting(text: str) -> bool:
        nonlocal calls
        calls += 1
        return bool(secret_kinds(text))

    filler = " ".join(f"word{i}" for i in range(2000))
    assert secret_spans(f"{filler} {GH} {filler}", counting) == [GH]
    assert calls < 60  # 4,001 tokens, one secret: about 2·log2(n) asks, not n

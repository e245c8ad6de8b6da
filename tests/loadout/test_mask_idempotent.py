"""`Masker.idempotent`: a masker that says so masks its own output to itself.

A turn's stored messages are replayed as masked while the masker is the same object
(`MaskMemo.masked_already`), which is right only when masking them again would change
nothing. Values made of the marks' own pieces break that (session 44's attacker: two marks
side by side spell the value `][vault:`); such a masker must say it is not idempotent.
"""

from __future__ import annotations

import base64
import random
import urllib.parse

import pytest

from bridge.loadout.mask import Masker

NAMES = ["A", "B", "PASS", "KEY_1"]
# the marks' pieces, escapes' leads, letters, digits, punctuation and a few non-ASCII
PIECES = ["[vault:", "]", "[", "vault", ":", "A", "PASS", "KEY_1", "vault:A", "PASS]", "%5D"]
PIECES += ["&#93;", "\\u005d", "x9", "secret", "-", "_", ".", "/", "+", "=", " ", "Q", "zz", "é"]
PIECES += ["ｖ", "7Fq", "sk-", "hunter", "2024", "!", "#", "@", "refused secret", "{", "}"]


def texts_around(values: dict[str, str], rng: random.Random) -> str:
    """A text of the values, their encodings and case, and the pieces, in random order."""
    forms = list(values.values())
    forms += [base64.b64encode(v.encode()).decode() for v in values.values()]
    forms += [urllib.parse.quote(v) for v in values.values()]
    forms += [v.upper() for v in values.values()]
    return "".join(rng.choice(forms + PIECES) for _ in range(rng.randint(1, 10)))


def test_values_of_the_marks_own_pieces_are_not_idempotent() -> None:
    assert not Masker({"KEY_1": "QKEY_1vault:Azz", "A": "][vault:"}).idempotent
    assert not Masker({"KEY": "vault:KEY"}).idempotent  # a piece of its own mark
    assert not Masker({"A": "pass%5Dword"}).idempotent  # decodes to a bracket
    assert not Masker({"A": "pässwörd"}).idempotent  # a folded reading may make one
    assert not Masker({"A": "hunter2"}, refused=["x]]yz12"]).idempotent


def test_ordinary_keys_and_passwords_are_idempotent() -> None:
    assert Masker({}).idempotent
    assert Masker({"OPENAI": "sk-proj-4fQ9xZ2mL8pR7tV3", "PW": "correct horse #42!"}).idempotent


@pytest.mark.parametrize("seed", range(4))
def test_an_idempotent_masker_masks_its_own_output_to_itself(seed: int) -> None:
    rng = random.Random(seed)
    judged = 0
    for _ in range(1500):
        values = {
            name: "".join(rng.choice(PIECES) for _ in range(rng.randint(2, 6)))
            for name in rng.sample(NAMES, rng.randint(1, 3))
        }
        masker = Masker(values)
        text = texts_around(values, rng)
        once = masker.mask(text)
        if masker.idempotent:
            judged += 1
            assert masker.mask(once) == once, (values, text)
    assert judged > 100  # the rule is not so strict that nothing is judged

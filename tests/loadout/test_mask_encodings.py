"""The masker removes every common spelling of a value, whole or streamed in pieces.

The spellings come from `tests/personal_tools/leakcheck.py`, written from the
encodings themselves (stdlib base64, urllib, json), not from the masker.
"""

from __future__ import annotations

import base64

from bridge.loadout.mask import Masker
from tests.personal_tools.leakcheck import leaks, spellings

VALUES = {
    "GITHUB_TOKEN": "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8",
    "AWS_SECRET": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DB": 'Tr0ub4dor&3 "x"/+?=\\ü',
    "PIN": "4711",
}


def everything() -> str:
    parts = [
        f"<{kind}>{form}</{kind}>" for v in VALUES.values() for kind, form in spellings(v).items()
    ]
    basic = base64.b64encode(b"x-access-token:" + VALUES["GITHUB_TOKEN"].encode()).decode()
    bearer = base64.b64encode(f"Authorization: Bearer {VALUES['AWS_SECRET']}\n".encode()).decode()
    return "start " + " ".join(parts) + f" Basic {basic} blob {bearer} end"


def test_every_spelling_is_masked_in_a_whole_text() -> None:
    text = everything()
    assert leaks(text, VALUES)  # the corpus really holds them
    out = Masker(VALUES).mask(text)
    assert leaks(out, VALUES) == []
    assert out.startswith("start <raw>[vault:") and out.endswith(" end")


def test_every_spelling_is_masked_at_every_chunk_boundary() -> None:
    text = everything()
    masker = Masker(VALUES)
    whole = masker.mask(text)
    for size in (1, 3, 7, 64):
        for offset in range(min(size, 2)):
            pieces = [text[:offset]] + [text[i : i + size] for i in range(offset, len(text), size)]
            stream = masker.stream()
            sent = ""
            for piece in pieces:
                sent += stream.feed(piece)
            sent += stream.flush()
            assert leaks(sent, VALUES) == [], (size, offset)  # `sent` only grows
            assert sent == whole, (size, offset)


def test_ordinary_text_passes_through_untouched() -> None:
    text = (
        "The build at 3f9a2c1 passed; see https://example.com/a%20b?x=1&y=2 and "
        "base64 aGVsbG8gd29ybGQ= means 'hello world'. Hex 48656c6c6f. Token count 4710."
    )
    masker = Masker(VALUES)
    assert masker.mask(text) == text
    stream = masker.stream()
    assert "".join(stream.feed(c) for c in text) + stream.flush() == text


def test_a_value_too_short_to_mask_is_left_alone() -> None:
    assert Masker({"X": "abc"}).mask("abc abc") == "abc abc"


def test_a_self_overlapping_value_is_held_and_masked_exactly() -> None:
    value = "a" * 300 + "b"  # every tail of a run of "a" is a prefix of the value
    stream = Masker({"LONG": value}).stream()
    sent = "".join(stream.feed("a") for _ in range(700)) + stream.feed("b") + stream.flush()
    assert sent == "a" * 400 + "[vault:LONG]"


def test_a_value_with_accents_is_masked_decomposed_and_read_as_windows_1252() -> None:
    """atk38 F3: the same letters in NFD (macOS text, a PDF copy) or the value's UTF-8
    read as Windows-1252 (a file encoded twice) reached the model unmasked."""
    import unicodedata

    value = "pässwörd-Ω42x"
    masker = Masker({"BANK_PIN": value})
    for form in (
        unicodedata.normalize("NFD", value),
        value.encode().decode("cp1252", "replace"),  # 'pÃ¤sswÃ¶rd-Î©42x'
    ):
        assert form != value
        assert masker.mask(f"my pin is {form} ok") == "my pin is [vault:BANK_PIN] ok", form
        stream = masker.stream()
        sent = "".join(stream.feed(c) for c in f"pin {form}.") + stream.flush()
        assert sent == "pin [vault:BANK_PIN].", form

"""The masker removes every common spelling of a value, whole or streamed in pieces.

The spellings come from `tests/personal_tools/leakcheck.py`, written from the
encodings themselves (stdlib base64, urllib, json), not from the masker.
"""

from __future__ import annotations

import base64
import random

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


def _decodable(masked: str, value: str, part: int = 6) -> bool:
    """Some `part` bytes of `value` decode from a base64 run left in `masked` (its runs
    between two marks joined, line breaks and all, read at each of the four offsets)."""
    import re

    for piece in masked.split("[vault:"):
        run = "".join(re.findall(r"[A-Za-z0-9+/]+", piece))
        for off in range(4):
            chars = run[off:][: (len(run) - off) // 4 * 4]
            data = base64.b64decode(chars)
            if any(value.encode()[i : i + part] in data for i in range(len(value) - part + 1)):
                return True
    return False


def test_a_value_in_line_wrapped_base64_is_masked_wherever_it_falls() -> None:
    """atk39 F5: base64 wrapped at 76 (MIME, the `base64` CLI) or 64 (PEM) columns; a value
    whose base64 crossed a line break reached the model whole (offsets 42-56 of 80)."""
    import textwrap

    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    for width, newline in ((76, "\r\n"), (64, "\n"), (76, "\n  ")):  # the last: YAML-indented
        for offset in range(80):
            blob = base64.b64encode(b"x" * offset + value.encode() + b"y" * 40).decode()
            text = "body:" + newline + newline.join(textwrap.wrap(blob, width)) + "\nend"
            assert _decodable(text, value)
            out = masker.mask(text)
            assert not _decodable(out, value), (width, offset, out)
            assert out.startswith("body:") and out.endswith("\nend") and "[vault:API]" in out
    stream = masker.stream()  # streamed in pieces: the same text as masked whole
    assert "".join(stream.feed(text[i : i + 5]) for i in range(0, len(text), 5)) + (
        stream.flush()
    ) == masker.mask(text)


def test_a_value_broken_over_two_lines_or_by_a_soft_hyphen_is_masked() -> None:
    """atk39 F7: a value wrapped onto the next line (PDF text, wrapped text) or with a soft
    hyphen (U+00AD, PDF hyphenation) inside reached the model unmasked. A line break counts
    after a token of 12 characters or more (`_WRAPPED`); in a whole text only (a stream
    holds back only what its held tail shows)."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    for text, masked in (
        (f"key={value[:10]}\n{value[10:]} rest", "key=[vault:API] rest"),
        (f"key: {value[:12]}\r\n    {value[12:]}\nnext", "key: [vault:API]\nnext"),
        (f"a\ntoken={value[:8]}\n{value[8:]}.", "a\ntoken=[vault:API]."),
        (f"key {value[:10]}\u00ad{value[10:]} rest", "key [vault:API] rest"),
        (f"key {value[:10]}\u00ad\n{value[10:]}", "key [vault:API]"),
    ):
        assert masker.mask(text) == masked, text
    prose = "a long line of prose\nthat wraps at words, Rt5p\nand goes on.\n"
    assert masker.mask(prose) == prose  # tokens joined by a break that spell no value


def test_a_value_with_sharp_s_upper_cased_or_read_as_latin_1_or_mixed_is_masked() -> None:
    """atk39 F7/F8: "Grüße" upper-cased is "GRÜSSE" (longer: no letter case of the value);
    its UTF-8 read as ISO-8859-1 (a tool reading UTF-8 as Latin-1: "ÃŸ" with a C1 control);
    its Windows-1252 bytes read by the mixed rule (a pair such as "ß§" read as UTF-8)."""
    from bridge.types.cp1252 import CP1252_TABLE

    value = "Grüße-Paß§wort-€42"
    masker = Masker({"PW": value})
    raw = value.encode("cp1252").decode("utf-8", "surrogateescape")
    mixed = "".join(CP1252_TABLE[ord(c) - 0xDC00] if "\udc80" <= c <= "\udcff" else c for c in raw)
    for form in (
        value.upper(),  # GRÜSSE-PASS§WORT-€42
        value.upper().lower(),
        value.encode().decode("latin-1"),
        mixed,  # Grüߧwort... as the mixed rule reads the Windows-1252 bytes
    ):
        assert form != value
        assert masker.mask(f"pw: {form} ok") == "pw: [vault:PW] ok", form


INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")  # ZWSP, ZWNJ, ZWJ, WJ, BOM


def _streamed(masker: Masker, text: str, size: int) -> str:
    stream = masker.stream()
    sent = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size))
    return sent + stream.flush()


def test_a_value_with_zero_width_characters_inside_is_masked_whole_and_streamed() -> None:
    """atk39 F7: a value with a zero-width space, joiner, non-joiner, word joiner or a BOM
    inside (copied from a web page or a chat that inserts them to break long words) reached
    the model as the value's letters; whole and streamed in pieces alike."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    for mark in INVISIBLE:
        for text, masked in (
            (f"key {value[:7]}{mark}{value[7:]} rest", "key [vault:API] rest"),
            (f"key {mark.join(value)} rest", "key [vault:API] rest"),  # one after each letter
            (f"key={value[:10]}{mark}\n{value[10:]}", "key=[vault:API]"),
        ):
            assert masker.mask(text) == masked, (mark, text)
            for size in (1, 3, 8):
                assert _streamed(masker, text, size) == masked, (mark, size)
    prose = "a word\u200bbreak and a joiner\u200d here, Rt5p\u2060Lm8 alone"
    assert masker.mask(prose) == prose  # the marks themselves are left where no value is


def test_a_value_in_fullwidth_letters_is_masked_whole_and_streamed() -> None:
    """atk39 F7: a value typed or converted in fullwidth forms (U+FF01-U+FF5E: what an East
    Asian input method or NFKC-unaware tool gives) reached the model unmasked."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    wide = "".join(chr(ord(c) + 0xFEE0) for c in value)
    half = value[:9] + wide[9:]  # half of it converted
    for form in (wide, wide.upper(), half):
        text = f"token\u3000{form}\u3002 rest"
        assert masker.mask(text) == "token\u3000[vault:API]\u3002 rest", form
        for size in (1, 4):
            assert _streamed(masker, text, size) == masker.mask(text), (form, size)
    b64 = base64.b64encode(value.encode()).decode()
    wide_b64 = "".join(chr(ord(c) + 0xFEE0) for c in b64)
    assert masker.mask(f"b {wide_b64} e") == "b [vault:API] e"
    ordinary = "全角のテキスト ＡＢＣ１２３ and ascii"
    assert masker.mask(ordinary) == ordinary


def test_every_default_ignorable_character_inside_a_value_is_looked_through() -> None:
    """atk40 #3: only six invisible characters were known; a value with an invisible
    separator (U+2063), a bidi mark or control (U+200E, U+202E, U+2066), a combining
    grapheme joiner (U+034F), a variation selector (U+FE0F), a Hangul filler or a tag
    character inside reached the model. Unicode's Default_Ignorable_Code_Point set
    (DerivedCoreProperties.txt) is looked through, whole and streamed."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    for mark in ("\u2063", "\u200e", "\u202e", "\u2066", "\u034f", "\ufe0f", "\u3164",
                 "\u061c", "\U000e0041", "\U0001d173", "\u2065", "\u2028", "\u2029"):  # fmt: skip
        text = f"key {value[:7]}{mark}{value[7:]} rest"
        assert masker.mask(text) == "key [vault:API] rest", hex(ord(mark))
        assert _streamed(masker, text, 1) == "key [vault:API] rest", hex(ord(mark))
    dense = "key " + ("\u200b" * 8).join(value) + " rest"  # 8 between each two letters
    assert masker.mask(dense) == "key [vault:API] rest"
    assert _streamed(masker, dense, 1) == "key [vault:API] rest"


def test_fullwidth_escaped_or_broken_by_invisible_characters_is_masked() -> None:
    """atk40 #4: a fullwidth value as JSON escapes (`json.dumps`' default `\\uff32...`),
    or with a zero-width space every one to three letters (runs shorter than four)."""
    import json

    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    wide = "".join(chr(ord(c) + 0xFEE0) for c in value)
    assert masker.mask(json.dumps({"token": wide})) == '{"token": "[vault:API]"}'
    for every in (1, 2, 3):
        broken = "\u200b".join(wide[i : i + every] for i in range(0, len(wide), every))
        assert masker.mask(f"key {broken} rest") == "key [vault:API] rest", every


def test_a_text_dense_with_invisible_characters_maps_its_matches_back_exactly() -> None:
    """atk40 #1: each match read with the invisible characters removed was mapped back by
    walking its region again (a region as long as the text when they are dense: masking
    64 KB of tool-call arguments took 8 s of the loop's CPU). Now the way back is made once
    per region; here it is checked against the walk it replaces, on texts where every
    match lands at a different distance from the region's start."""
    import random

    from bridge.loadout import mask as mask_module

    value = "4711"
    masker = Masker({"PIN": value})
    rng = random.Random(40)
    for _ in range(200):
        parts = []
        for _ in range(rng.randrange(1, 12)):
            cut = rng.randrange(1, len(value))
            mark = rng.choice(("\u200b", "\u00ad", "\u2060", "\u200b\n", "\u00ad\u00ad"))
            parts.append(rng.choice(("x ", "word ", "a\u200bb ", "")) + value[:cut] + mark)
            parts[-1] += value[cut:] + rng.choice((" ", ". ", "\n"))
        text = "".join(parts)
        low = mask_module._lower(text)
        joined = mask_module._Joined(low, 20)
        found = [
            (m.start(), m.end(), value) for m in __import__("re").finditer(value, joined.joined)
        ]
        walked = []
        for a, b, form in found:  # the old walk: count the regions, then the breaks, per match
            ka, kb = joined.joined.count("\0", 0, a), joined.joined.count("\0", 0, b - 1)
            first_a = joined.joined.rfind("\0", 0, a) + 1
            first_b = joined.joined.rfind("\0", 0, b - 1) + 1
            region_a = low[slice(*joined.regions[ka])]
            region_b = low[slice(*joined.regions[kb])]
            start = joined.regions[ka][0] + mask_module._unbroken(region_a, a - first_a)
            end = joined.regions[kb][0] + mask_module._unbroken(region_b, b - 1 - first_b) + 1
            walked.append((start, end, form))
        assert joined.spans(found) == walked, text
        assert value not in masker.mask(text).replace("[vault:PIN]", "")


SPACES = ("\u00a0", "\u2009", "\u202f", "\u2007", "\u205f", "\u3000", "\u1680")


def test_a_value_s_own_spaces_match_every_space_character() -> None:
    """atk40 #3: a passphrase written with a no-break, thin or ideographic space where the
    value has U+0020 reached the model; and a value holding a no-break space was known only
    with it. A space put inside a value that has none is ordinary text, as U+0020 is."""
    import json

    value = "correct horse battery staple"
    masker = Masker({"PASS": value})
    for space in SPACES:
        text = f"pw: {value.replace(' ', space)}. ok"
        assert masker.mask(text) == "pw: [vault:PASS]. ok", hex(ord(space))
        for size in (1, 3):
            assert _streamed(masker, text, size) == "pw: [vault:PASS]. ok", (hex(ord(space)), size)
    escaped = json.dumps({"pw": value.replace(" ", "\u00a0")})  # '"correct\\u00a0horse...'
    assert masker.mask(escaped) == '{"pw": "[vault:PASS]"}'
    own = Masker({"PASS": "correct\u00a0horse\u00a0battery"})
    assert own.mask("pw correct horse battery") == "pw [vault:PASS]"
    pin = Masker({"PIN": "4711"})
    for space in (" ", *SPACES):  # a space inside a value that has none: left, as U+0020 is
        assert pin.mask(f"call 47{space}11 now") == f"call 47{space}11 now"
    prose = "Prix\u00a0: 42\u202f€ ! Voilà\u2026 see №\u00a05™ and 3\u00b2 m"
    assert pin.mask(prose) == prose and Masker({"PASS": value}).mask(prose) == prose


def test_compatibility_forms_of_a_value_are_masked_whole_and_streamed() -> None:
    """atk40 #3/#4: a value in mathematical letters (U+1D400...), circled letters, super-
    or subscript digits, a ligature (a PDF's "\\ufb01"), or fullwidth mixed with ASCII in
    runs of three or fewer reached the model: NFKC reads each as the ASCII it stands for."""
    value = "Rt5pLm8Qz2fiWx7"
    masker = Masker({"API": value})

    def shifted(base_upper: int, base_lower: int, base_digit: int) -> str:
        out = ""
        for c in value:
            if c.isdigit():
                out += chr(base_digit + int(c))
            else:
                out += chr((base_upper if c.isupper() else base_lower) + ord(c.lower()) - 97)
        return out

    wide = "".join(chr(ord(c) + 0xFEE0) for c in value)
    for form in (
        shifted(0x1D400, 0x1D41A, 0x1D7CE),  # mathematical bold
        shifted(0x1D670, 0x1D68A, 0x1D7F6),  # mathematical monospace
        shifted(0x24B6, 0x24D0, 0x2460 - 1).replace(chr(0x2460 - 1), "0"),  # circled
        value.replace("fi", "\ufb01"),  # a ligature: one character for two
        "".join(w if i % 4 == 3 else c for i, (c, w) in enumerate(zip(value, wide, strict=True))),
        value[:-3] + wide[-3:],  # the last three converted
    ):
        text = f"key… {form} rest…"
        assert masker.mask(text) == "key… [vault:API] rest…", ascii(form)
        for size in (1, 4):
            assert _streamed(masker, text, size) == "key… [vault:API] rest…", (ascii(form), size)
    pin = Masker({"PIN": "4711"})
    superscript, subscript, circled = (
        "\u2074\u2077\u00b9\u00b9",
        "\u2084\u2087\u2081\u2081",
        "\u2463\u2466\u2460\u2460",
    )
    for form in (superscript, subscript, circled):
        assert pin.mask(f"pin {form}!") == "pin [vault:PIN]!", ascii(form)
    ordinary = "全角のテキスト ＡＢＣ１２３、版本：ｖ２．４．１ and 𝐛𝐨𝐥𝐝 ① ⑵ ﬁne"
    assert masker.mask(ordinary) == ordinary and pin.mask(ordinary) == ordinary


def test_a_fullwidth_value_percent_encoded_as_utf_8_is_masked() -> None:
    """atk40 #4: fullwidth letters URL-encoded (`%EF%BC%B2...`, what `quote` gives) reached
    the model: a UTF-8 character's %XX bytes are decoded as one escape."""
    from urllib.parse import quote

    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"API": value})
    wide = "".join(chr(ord(c) + 0xFEE0) for c in value)
    for form in (quote(wide), quote(wide).lower(), quote(value[:6]) + quote(wide[6:])):
        text = f"GET /?k={form}&x=1"
        assert masker.mask(text) == "GET /?k=[vault:API]&x=1", form
        for size in (1, 5):
            assert _streamed(masker, text, size) == "GET /?k=[vault:API]&x=1", (form, size)
    ordinary = "see https://example.com/caf%C3%A9?q=%E2%9C%93 and 100%EF"
    assert masker.mask(ordinary) == ordinary


def test_a_stream_masks_what_the_whole_text_masks_across_spaces_and_earlier_text() -> None:
    """atk40 #5/#7: streamed, a passphrase with a zero-width space or soft hyphen inside
    was sent (the stream held back only since the last space), and a value whose fullwidth
    run began in text already sent was sent; the same text whole was masked."""
    passphrase = Masker({"PASS": "correct horse battery staple"})
    for mark in ("\u200b", "\u00ad"):
        text = f"pw: correct horse bat{mark}tery staple. ok"
        for size in (1, 3, 8):
            assert _streamed(passphrase, text, size) == "pw: [vault:PASS]. ok", (mark, size)
    value = Masker({"V": "AB12cd34efGH"})
    text = "id \uff38\uff39\uff21\uff2212cd34efGH end"
    assert value.mask(text) == "id \uff38\uff39[vault:V] end"
    for size in (1, 2, 5):
        assert _streamed(value, text, size) == "id \uff38\uff39[vault:V] end", size


def test_an_escaped_character_next_to_a_raw_invisible_one_is_masked() -> None:
    """atk2 s41 #4: an escape of a visible character (`&uuml;`, `&nbsp;`, `\\n`, `&#47;`)
    and a raw invisible character in the same value (German HTML with a soft hyphen, a
    `json.dumps`'d passphrase holding a zero-width space) reached the model whole: the
    text's own invisible characters were read away only beside an escaped invisible one."""
    cases = [
        ("Grüße-Kätzchen-42", "<p>Gr&uuml;&szlig;e-K&auml;tz\u00adchen-42</p>", "<p>[]</p>"),
        ("correct horse battery staple", "pw correct&nbsp;horse battery sta\u00adple.", "pw []."),
        (
            "correct horse battery staple",
            '{"n": "correct\\nhorse battery sta\u200bple"}',
            '{"n": "[]"}',
        ),
        ("ghp_R8x2Kq9LmZ4v/T7wYb1Nc6", "tok ghp_R8x2Kq9LmZ4v&#47;T7wYb1\u00adNc6 e", "tok [] e"),
    ]
    for value, text, masked in cases:
        masker = Masker({"V": value})
        assert masker.mask(text) == masked.replace("[]", "[vault:V]"), text
        for size in (1, 4, 9):
            assert _streamed(masker, text, size) == masked.replace("[]", "[vault:V]"), size


def test_an_escaped_invisible_character_before_a_line_break_is_masked() -> None:
    """atk2 s41 #6: `&shy;` at a wrapped HTML line's end, or JSON's `\\u200b\\n`, inside a
    token let it through, whole and streamed (the raw characters were masked)."""
    token = "ghp_R8x2Kq9LmZ4vT7wYb1Nc6Hd3Jf5Gs0Pa2Ue8"
    masker = Masker({"T": token})
    for cut in ("&shy;\n", "\\u200b\\n", "&#8203;\r\n  ", "%C2%AD\n"):
        text = f"tok {token[:12]}{cut}{token[12:]} end"
        assert masker.mask(text) == "tok [vault:T] end", cut
        for size in (1, 5, 16):
            assert _streamed(masker, text, size) == "tok [vault:T] end", (cut, size)
    prose = "a soft&shy;\nhyphen and \\u200b\\n in JSON, no value"
    assert masker.mask(prose) == prose


def test_an_escaped_invisible_character_before_a_short_next_line_is_masked() -> None:
    """Session 42's attacker fuzz (stream only) and session 43's review: `\u200b` then a
    line break inside a value whose next line is short (`-ca\u200b\nt and`) was masked only
    when the next line began with four letters (a wrapped line's edge), so one-letter
    remainders went through whole and streamed. The decoded view is now also read joined
    around each escaped invisible character it read away. Streamed, a tail read joined is
    also read with its blanks squeezed (`\uff4f&#x200B;\r\n\uff4b\uff01  h...`)."""
    masker = Masker({"V": "ghp_R8x2Kq9L-cat"})
    for cut in ("\\u200b\n", "&shy;\n", "&#8203;\r\n", "\\u00ad\\n"):
        text = f"key ghp_R8x2Kq9L-ca{cut}t and more"
        assert masker.mask(text) == "key [vault:V] and more", cut
        for size in (1, 2, 7):
            assert _streamed(masker, text, size) == "key [vault:V] and more", (cut, size)
    spaced = Masker({"V": "ok! horse"})
    text = "\u300d\u3067\u3059\u3002\uff4f&#x200B;\r\n\uff4b\uff01  horse\u6f22"
    assert spaced.mask(text) == "\u300d\u3067\u3059\u3002[vault:V]\u6f22"
    for size in (1, 2, 3):
        assert _streamed(spaced, text, size) == spaced.mask(text), size
    prose = "soft&shy;\nhyphens and a \\u200b\nline, no value"
    assert masker.mask(prose) == prose
    # the line break after it may be the value's own space: read both ways
    passphrase = Masker({"V": "\u00fcber cat"})
    text = " \u00fc\uff42er\\u200b%E2%80%8B\\nc\u200b\\u0061t\u300d"
    assert passphrase.mask(text) == " [vault:V]\u300d"
    # only the line break right after it is read away (atk s43 #3: every line break within
    # the masker's reach was, and a stream that had sent the escape read them as breaks)
    for text, value in (
        ('{"note": "see\\u200b below", "pw": "hun\\nter22"}', "hunter22"),
        ("Kontakt\\u00addaten: Zimmer 12\n34 Pl\u00e4tze", "1234"),
    ):
        masker = Masker({"V": value})
        for size in (1, 3):
            assert _streamed(masker, text, size) == masker.mask(text) == text, (text, size)


def test_a_value_in_python_s_long_unicode_escapes_is_masked() -> None:
    """atk2 s41 #12: `ascii()` of a value in math-bold letters (`\\U0001d42b...`), or with
    an escaped tag inside, reached the model: Python's `\\UXXXXXXXX` is decoded too."""
    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    masker = Masker({"V": value})
    bold = "".join(chr(0x1D400 + ord(c) - 65) if c.isupper() else c for c in value)
    for text in (
        f"got {bold!a} back",
        f"got '{value[:9]}\\U000e0020{value[9:]}' back",
    ):
        out = masker.mask(text)
        assert out in ("got [vault:V] back", "got '[vault:V]' back"), (text, out)
        for size in (1, 7):
            assert _streamed(masker, text, size) == out, (text, size)
    ordinary = r"path C:\Users\U0001 and '\U0001f600'"
    assert masker.mask(ordinary) == ordinary


def test_short_fullwidth_words_of_a_passphrase_are_masked_whole_and_streamed() -> None:
    """atk2 s41 #10: a passphrase of 3-letter words typed on an IME (`ｃａｔ　ｄｏｇ`), a
    short fullwidth word before a space and ASCII, or next to Vietnamese letters reached the
    model: only runs of four, or shorter ones touching ASCII, were read as ASCII. Streamed,
    a whole value ending in such a run waits for what follows, which decides."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    short = [w.translate(wide) for w in ("cat", "dog", "run", "fox")]
    cases = [
        ("cat dog run fox", "pw " + "\u3000".join(short)),
        ("cat dog run fox", "pw " + " ".join(short)),
        ("x/y Kq9L", "pre " + "x/y".translate(wide) + " Kq9L"),
        ("Grüße a-b", "pre Grüße " + "a-b".translate(wide)),
        ("Nguyễn-42", "id " + "Nguy".translate(wide) + "ễn-42"),
    ]
    for value, text in cases:
        masker = Masker({"V": value})
        for end in (" post", "。", "") if "\u3000" in text or "ễ" in text else (" post", ""):
            assert masker.mask(text + end) == text.split(" ")[0] + " [vault:V]" + end, (text, end)
            for size in (1, 2, 5):
                assert _streamed(masker, text + end, size) == masker.mask(text + end), size
    ordinary = "我，你：他（注）\u3000見出し ａｂ 漢字 and 漢ａｂ漢"
    assert Masker({"V": "cat dog run fox"}).mask(ordinary) == ordinary


def test_short_fullwidth_words_a_line_apart_are_masked_whole_and_streamed() -> None:
    """Session 42's documented gap: short fullwidth words of a passphrase one a line (or
    after an ASCII word and a space, before two spaces) stayed fullwidth, so the value went
    through whole and streamed. A run one or two blanks (a line break too) from a letter or
    another run is now read as ASCII; CJK prose with its punctuation stays as it is."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    w = {word: word.translate(wide) for word in ("cat", "dog", "run", "fox", "x/y", "ok!")}
    cases = [
        ("cat dog run fox", "pw:\n" + "\n".join(w[k] for k in ("cat", "dog", "run", "fox"))),
        ("cat dog run", "words\n\n" + "\r\n".join(w[k] for k in ("cat", "dog", "run"))),
        ("ok! run x/y", "e ok! " + w["run"] + "\n\nx/y" + "big".translate(wide)),
        ("cat x/y", "acat\u3000" + w["x/y"] + " \u3002"),
        ("ok! run", "\u6f22 ok! " + w["run"] + "  e "),
        ("dog fox", "\u6f22\u5b57" + w["dog"] + "\n\n" + w["fox"] + "\u3000\u6f22"),
        ("Grüße a-b", "pre Grüße " + "a-b".translate(wide) + "\u3002"),
    ]
    for value, text in cases:
        masker = Masker({"V": value})
        assert "[vault:V]" in masker.mask(text), text
        for size in (1, 2, 3, 5):
            assert _streamed(masker, text, size) == masker.mask(text), (text, size)
    ordinary = "我，你：\n（注）\n見出し\r\n！\n\n「ａｂ」漢字\tａ"
    assert Masker({"V": "cat dog run fox"}).mask(ordinary) == ordinary


def test_a_value_with_fullwidth_runs_and_blank_edges_is_masked() -> None:
    """atk s43 #2: a value holding short fullwidth runs and ending (or starting) with a
    blank (saved from `echo`, with its line break) went through once such runs one blank
    from a letter read as ASCII: its last run was taken for an inner one, read one way
    only. A run with only blanks between it and an edge is an edge run."""
    cases = [
        ("\uff21\uff22\u306d\u3053\uff23\uff24\n", "x{}\u3067\u3059"),
        ("\uff21\uff22\u306d\u3053\uff23\uff24\t", "x{}\u3067\u3059"),
        ("\uff21\uff22\u306d\u3053\uff23\uff24\n\n", "x{}\u3067\u3059"),
        ("\uff30\uff37\u306d\u3053\uff11\n", "pw{}\u4ee5\u4e0a"),
        ("\uff21\uff22\u306d\u3053\uff23\uff24 ", "x{}\u3067\u3059"),
        ("\n\uff21\uff22\u306d\u3053\uff23\uff24", "pw{}\u3067\u3059"),
    ]
    for value, shape in cases:
        masker = Masker({"V": value})
        text = shape.format(value)
        assert "[vault:V]" in masker.mask(text), (value, text)
        for size in (1, 3):
            assert _streamed(masker, text, size) == masker.mask(text), (value, size)


def test_a_stream_reads_short_fullwidth_runs_as_the_whole_text_does() -> None:
    """Whether a short fullwidth run reads as ASCII depends on what is around it (a run of
    four, a space and another run before it, ASCII after it). A stream holds that with the
    run, so it masks what the whole text masks. Seeded: words of a passphrase, some in
    fullwidth, joined by spaces, U+3000 or line breaks, among CJK or fullwidth context."""
    before = ["pre ", "漢字", "ｂｉｇ\u3000", "", "（注）", "ｃａｔ ", "ｂ ", "ｘ\u3000"]
    after = [" post", "。", "", "漢", "\u3000ｂ ", "ｃａｔ"]
    _stream_as_whole_seeded(random.Random(42), before, after, 200)


def _stream_as_whole_seeded(
    rng: random.Random, before: list[str], after: list[str], cases: int
) -> None:
    """Passphrases of short words, some in fullwidth, joined by spaces, U+3000 or line
    breaks, between `before` and `after`: streamed in pieces of 1-3, as the whole text."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    words = ["cat", "dog", "x/y", "Kq9L", "run", "ab", "fox", "ok!"]
    for _ in range(cases):
        chosen = rng.sample(words, rng.randint(2, 3))
        shown = ""
        for k, word in enumerate(chosen):
            shown += word.translate(wide) if rng.random() < 0.7 else word
            shown += rng.choice([" ", "\u3000", "\n", "\n\n"]) if k < len(chosen) - 1 else ""
        text = rng.choice(before) + shown + rng.choice(after)
        masker = Masker({"V": " ".join(chosen)})
        whole = masker.mask(text)
        for size in (1, 2, 3):
            assert _streamed(masker, text, size) == whole, (text, size)


def test_a_stream_reads_what_it_already_sent_before_a_fullwidth_run() -> None:
    """Session 42's documented gap: an ASCII letter just before a short fullwidth run makes
    it read as ASCII (`a\uff44\uff4f\uff47` is `adog`), but a stream had sent the letter
    before the run came and read the run alone: the whole text was masked, the stream let
    the value through. A stream now reads its last characters sent again (never sending
    them again) before each piece. Seeded as the test above, with such letters before."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    cases = [
        ("dog cat", "a" + "dog".translate(wide) + "\n\n" + "cat".translate(wide) + " pre "),
        ("run x/y", "a" + "run".translate(wide) + "\nx/y   post"),
        ("ab dog", "a" + "ab".translate(wide) + "\ndog\n"),
    ]
    for value, text in cases:
        masker = Masker({"V": value})
        assert masker.mask(text).startswith("a[vault:V]"), text
        for size in (1, 2, 3):
            assert _streamed(masker, text, size) == masker.mask(text), (text, size)
    before = ["a", "e ", "pw:a", "x1", "ｂ a"]
    after = [" post", "。", "", "\na", "\u3000ｂ ", "ｃａｔ"]
    _stream_as_whole_seeded(random.Random(43), before, after, 150)


def test_what_a_stream_reads_again_is_never_sent_twice() -> None:
    """The characters a stream keeps to read what follows are sent once: a text without a
    value streams as itself in pieces of any size, a value after them is masked once, and a
    surrogate pair split between two pieces moves no offset (each half is U+FFFD, as when
    each piece was read alone)."""
    masker = Masker({"V": "Rt5pLm8Qz2"})
    rng = random.Random(7)
    alphabet = "ab ｃｄ\u3000\n漢&;\\u0041é\u200b"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for size in (1, 2, 4):
            assert _streamed(masker, text, size) == masker.mask(text), (text, size)
    for size in (1, 3, 7):
        out = _streamed(masker, "key Rt5pLm8Qz2 and Rt5pLm8Qz2!", size)
        assert out == "key [vault:V] and [vault:V]!", size
    stream = masker.stream()
    out = stream.feed("x\ud83d") + stream.feed("\ude00 Rt5pLm8Qz2 y") + stream.flush()
    assert out == "x\ufffd\ufffd [vault:V] y"
    # what it keeps never starts inside an escape (atk s43 #4: an escaped backslash's second
    # half then `u0041` read as `A` made `Axyz` of a text that holds no `A`)
    escaped = Masker({"V": "Axyz"})
    stream = escaped.stream()
    out = stream.feed("q\\\\u0041xy") + stream.feed("z\uff46") + stream.flush()
    assert out == escaped.mask("q\\\\u0041xyz\uff46") == "q\\\\u0041xyz\uff46"


def test_a_value_with_two_spaces_written_with_one_is_masked_streamed() -> None:
    """atk2 s41 #8: a value holding a double (or triple) space, written with a single space,
    was masked whole but sent when streamed: the tail was read with its blanks squeezed only
    when that changed it."""
    for value in ("correct  horse", "4711  a-b", "ghp_R8x2   x/y"):
        masker = Masker({"V": value})
        text = "pw " + " ".join(value.split()) + " e"
        assert masker.mask(text) == "pw [vault:V] e", value
        for size in (1, 2, 3, 5):
            assert _streamed(masker, text, size) == "pw [vault:V] e", (value, size)


def test_a_passphrase_s_space_as_another_line_break_is_masked() -> None:
    """atk2 s41 #9: U+2028, U+2029, NEL, VT or FF in place of a passphrase's space (a
    Word line break is VT; JavaScript strings and PDFs carry U+2028) let it through."""
    masker = Masker({"V": "correct horse battery staple"})
    for blank in ("\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x0c\n", "\u2028 "):
        text = f"pw correct{blank}horse battery{blank}staple."
        assert masker.mask(text) == "pw [vault:V].", ascii(blank)
        for size in (1, 3, 7):
            assert _streamed(masker, text, size) == "pw [vault:V].", (ascii(blank), size)
    assert Masker({"V": "4711"}).mask("47\x0b11 and 47\x0c11") == "47\x0b11 and 47\x0c11"


def test_two_fullwidth_values_side_by_side_are_both_masked_streamed() -> None:
    """atk s42 #1: a user name and a password in fullwidth a U+3000 apart, then fullwidth
    punctuation: the stream held the password with the character before it, which was the
    user name's last, and sent the user name raw (the whole text masked both)."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    masker = Masker({"USER": "alice.admin", "PASS": "Rt5pLm8Qz2Wx7Nv4"})
    user, password = "alice.admin".translate(wide), "Rt5pLm8Qz2Wx7Nv4".translate(wide)
    for text in (
        f"{user}\u3000{password}！！",
        f"{user}：{password}！！",
        f"{password}（{user}）！",
    ):
        whole = masker.mask(text)
        assert "[vault:USER]" in whole and "[vault:PASS]" in whole, whole
        for size in (1, 2, 5, len(text)):
            assert _streamed(masker, text, size) == whole, (text, size)


def test_a_value_holding_fullwidth_characters_is_masked_as_stored() -> None:
    """atk s42 #2: a value with fullwidth characters inside (`ねこ１ぴきＡ`) written as it is
    stored was let through where its last run reads as ASCII by what follows it (the text's
    end, a space and ASCII): the text read neither as the value nor as its ASCII form."""
    for value, text in (
        ("ねこ１ぴきＡ", "パスワード：ねこ１ぴきＡ"),
        ("第２会議室Ｂ", "会議は第２会議室Ｂ (10時)"),
        ("東京１号館 Ａ", "東京１号館 Ａ"),
    ):
        masker = Masker({"V": value})
        assert "[vault:V]" in masker.mask(text) and value not in masker.mask(text), text
        for size in (1, 3):
            assert _streamed(masker, text, size) == masker.mask(text), (text, size)


def test_a_chain_of_fullwidth_values_streams_as_it_comes() -> None:
    """atk2 s42 #1: a value written in fullwidth many times, a U+3000 apart, was held whole
    until the stream ended (each match held the one before it: quadratic, and the reply
    froze); each match is sent, masked, once the next one's context is known."""
    wide = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
    masker = Masker({"V": "Rt5pLm8Qz2Wx7Nv4"})
    text = "\u3000".join(["Rt5pLm8Qz2Wx7Nv4".translate(wide)] * 60) + "。"
    stream = masker.stream()
    sent = [stream.feed(char) for char in text]
    assert (
        "".join(sent) + stream.flush()
        == masker.mask(text)
        == "\u3000".join(["[vault:V]"] * 60) + "。"
    )
    shown = "".join(sent[: len(text) // 2])  # half-way, what was sent: all but a short tail
    assert shown.count("[vault:V]") >= 28, shown

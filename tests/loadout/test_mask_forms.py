"""The masker reads every compatibility form of ASCII, escaped invisible characters, a value's
own spaces as any run of blanks, and JSON surrogate-pair escapes (atk41 #1, #2, #5, #7, #8).

Each case is checked whole and streamed in pieces of several sizes.
"""

from __future__ import annotations

import json
import sys
import unicodedata

from bridge.loadout import mask as mask_module
from bridge.loadout.mask import Masker


def _streamed(masker: Masker, text: str, size: int) -> str:
    stream = masker.stream()
    sent = "".join(stream.feed(text[i : i + size]) for i in range(0, len(text), size))
    return sent + stream.flush()


def _masked_everywhere(masker: Masker, text: str, want: str) -> None:
    assert masker.mask(text) == want, ascii(text)
    for size in (1, 3, 7):
        assert _streamed(masker, text, size) == want, (ascii(text), size)


def test_every_code_point_whose_nfkc_is_ascii_is_read_as_that_ascii() -> None:
    """The fold's ranges (`_COMPAT_BLOCKS`) are written in the module, not derived at import:
    every code point of this Python's Unicode whose NFKC form is printable ASCII (or that is
    a space character) must be inside them, so a Unicode version that adds one fails here."""
    missing = []
    for code in range(0x80, sys.maxunicode + 1):
        if 0xFF01 <= code <= 0xFF5E:  # fullwidth ASCII: read apart (`_HALFWIDTH`)
            continue
        char = chr(code)
        if unicodedata.category(char) == "Zs":
            want = " "
        else:
            want = unicodedata.normalize("NFKC", char)
            if want == char or not want.isascii() or not want.isprintable():
                continue
        if mask_module._COMPAT.get(code) != want:
            missing.append(f"U+{code:04X}")
    assert not missing, missing


def test_small_vertical_and_other_compatibility_forms_of_a_value_are_masked() -> None:
    """atk41 #1: `-` as U+FE63, `_` as U+FE4D/FE33/FE34, small `@ $ % & # * + = ! ?`, `s` as
    U+017F and modifier letters reached the model whole: they were outside the fold's blocks."""
    value = "sk-Rt5p_Lm8@Qz2$Wx%7s&Nv#4*Kb+9=J!q?CF"
    masker = Masker({"KEY": value})
    forms = {
        "-": "\ufe63", "_": "\ufe4d", "@": "\ufe6b", "$": "\ufe69", "%": "\ufe6a", "&": "\ufe60",
        "#": "\ufe5f", "*": "\ufe61", "+": "\ufe62", "=": "\ufe66", "!": "\ufe57", "?": "\ufe56",
        "s": "\u017f", "q": "\U000107a5", "C": "\ua7f2", "F": "\ua7f3",
    }  # fmt: skip
    for plain, form in forms.items():
        _masked_everywhere(masker, f"key {value.replace(plain, form)} end", "key [vault:KEY] end")
    for low_line in ("\ufe33", "\ufe34"):
        _masked_everywhere(masker, f"key {value.replace('_', low_line)}.", "key [vault:KEY].")


def test_a_value_with_an_escaped_invisible_character_inside_is_masked() -> None:
    """atk41 #2: `&shy;` (HTML hyphenation), `&#8203;`, `&ZeroWidthSpace;`, JSON `\\u200b`,
    `%E2%80%8B`, `%C2%AD` inside a value reached the model, while the same character itself
    was masked: the decoded view was not read joined."""
    value = "sk-Rt5pLm8Qz2_Wx7sNv4Kb9J"
    masker = Masker({"KEY": value})
    for escape in ("&shy;", "&#8203;", "&#x200B;", "&ZeroWidthSpace;", "%E2%80%8B", "%C2%AD"):
        text = f"<p>{value[:10]}{escape}{value[10:]}</p>"
        _masked_everywhere(masker, text, "<p>[vault:KEY]</p>")
    dumped = json.dumps({"k": value[:5] + "\u200b" + value[5:14] + "\u00ad" + value[14:]})
    _masked_everywhere(masker, dumped, '{"k": "[vault:KEY]"}')
    prose = "Donau&shy;dampf&shy;schiff and a&#8203;b, %E2%80%8B"
    assert masker.mask(prose) == prose


def test_a_passphrase_s_spaces_match_line_breaks_tabs_and_runs_of_spaces() -> None:
    """atk41 #5: a passphrase wrapped at a line break (LF, CRLF), with a tab or two spaces
    in place of one of its spaces reached the model, whole and streamed. A value without
    spaces still does not match text with a space put inside."""
    value = "correct horse battery staple"
    masker = Masker({"PASS": value})
    for blank in ("\n", "\r\n", "\t", "  ", " \n  ", "\n\n"):
        text = f"pw: correct horse{blank}battery staple. ok"
        _masked_everywhere(masker, text, "pw: [vault:PASS]. ok")
    every = "pw correct\thorse\r\nbattery   staple!"
    _masked_everywhere(masker, every, "pw [vault:PASS]!")
    lines = Masker({"NOTE": "line1-Xy7q\nline2  Zk9w"})  # its own line break and two spaces
    _masked_everywhere(lines, "n: line1-Xy7q\nline2\tZk9w.", "n: [vault:NOTE].")
    _masked_everywhere(lines, "n: line1-Xy7q\nline2 \n Zk9w.", "n: [vault:NOTE].")
    pin = Masker({"PIN": "4711"})
    for blank in ("\n", "\t", "  "):
        assert pin.mask(f"call 47{blank}11 now") == f"call 47{blank}11 now"
    assert masker.mask("correcthorse batterystaple") == "correcthorse batterystaple"


def test_fullwidth_letters_around_accented_ones_and_surrogate_escapes_are_masked() -> None:
    """atk41 #7: `Ｇｒüße－Ｋätｚｃｈｅｎ－４２` (an IME's fullwidth ASCII around accented
    letters) for `Grüße-Kätzchen-42`; #8: math bold letters written as JSON surrogate-pair
    escapes (`json.dumps`: `\\ud835\\udc11`)."""
    umlaut = Masker({"PW": "Grüße-Kätzchen-42"})
    wide = "".join(chr(ord(c) + 0xFEE0) if c.isascii() else c for c in "Grüße-Kätzchen-42")
    _masked_everywhere(umlaut, f"pw {wide} end", "pw [vault:PW] end")
    value = "Rt5pLm8Qz2Wx"
    bold = "".join(
        chr(0x1D7CE + int(c))
        if c.isdigit()
        else chr(0x1D400 + ord(c) - 65)
        if c.isupper()
        else chr(0x1D41A + ord(c) - 97)
        for c in value
    )
    masker = Masker({"API": value})
    _masked_everywhere(masker, json.dumps(f"key {bold} end"), '"key [vault:API] end"')
    cjk = "全角：ＡＢ，テキスト「ｘ」and é，ü。"
    assert umlaut.mask(cjk) == cjk and masker.mask(json.dumps("𝐛𝐨𝐥𝐝 😀")) == json.dumps("𝐛𝐨𝐥𝐝 😀")


def test_blanks_invisible_characters_and_escapes_together_in_a_value_are_masked() -> None:
    """The fixes above combined, whole and streamed: a passphrase wrapped at a line break with
    a zero-width space inside (the joined view removed the line break too); JSON-escaped
    line breaks and tabs between its words (the stream held no decoded blanks); a value with
    both a zero-width space and an escaped one (`&#8203;`)."""
    passphrase = Masker({"PASS": "correct horse battery staple"})
    for text in (
        "pw: correct\n\thorse bat\u200btery  staple.",
        "pw: cor\u00adrect\r\nhorse\u3000battery\tstaple.",
        "pw: correct\\n\\thorse battery\\u00a0staple.",
        "pw: corr&shy;ect\nhorse\nbattery  staple.",
    ):
        _masked_everywhere(passphrase, text, "pw: [vault:PASS].")
    token = Masker({"KEY": "sk-Rt5pLm8Qz2_Wx7sNv4Kb9J"})
    _masked_everywhere(token, "x sk-R\u200bt5pLm8&#8203;Qz2_Wx7sNv4Kb9J.", "x [vault:KEY].")

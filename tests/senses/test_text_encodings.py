"""Text that is not UTF-8 is read the same on every channel, and binaries are still refused.

What Excel's "CSV" export writes on a German or French Windows (Windows-1252)
and what Notepad's "Unicode" writes (UTF-16 with a byte order mark) reach
the model with their umlauts intact, through the real paths: a Telegram
document (fake Bot API), the web page's upload (a real web channel over a
socket) and `/attach` in `roost chat` (under a pty). The model is told the
encoding, so a tool that opens the file knows how. A file that is not text
(a program, compressed data) is refused whatever its name says, and the
limits on characters still apply.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import pytest

from bridge.channels.common.sniff import Sniffed, Sniffer
from bridge.senses.text_encoding import TextSniff, decode
from tests.fakes.fake_openai import FakeOpenAI, Text, last_user_text
from tests.senses.conftest import senses_running
from tests.senses.samples import make_pdf, make_png
from tests.spine.terminal_pty import Terminal
from tests.spine.test_terminal_items import ENTER, env_for, fake, inbox_files, term
from tests.spine.test_web_upload import served
from tests.telegram.conftest import ALICE

__all__ = ["fake", "term"]  # pytest fixtures, used by name

CSV_TEXT = "name;price\nKäse;3,50\nBrötchen;0,45\n"
CSV_1252 = CSV_TEXT.encode("cp1252")
NOTE_TEXT = "Grüße aus Köln – 20 € bitte\r\n"
NOTE_16 = NOTE_TEXT.encode("utf-16")  # with its byte order mark, as Notepad writes it


def compressed() -> bytes:
    """Compressed data with its NUL bytes taken out: binary that no NUL test catches."""
    data = zlib.compress(Path(sys.executable).resolve().read_bytes()[:300_000], 9)
    return data.replace(b"\x00", b"\x01")


def text_of(body: bytes) -> str:
    found = decode(body)
    assert found is not None
    return found.text


def sniffed(body: bytes, name: str, chunk: int) -> Sniffed | None:
    s = Sniffer()
    for start in range(0, len(body), chunk):
        s.feed(body[start : start + chunk])
    return s.result(name)


@pytest.mark.parametrize("chunk", [1, 3, 7, 65_536])
def test_one_rule_however_the_body_is_cut(chunk: int) -> None:
    texts = {
        "a.csv": (CSV_1252, "cp1252"),
        "b.txt": (NOTE_16, "utf-16"),
        "c.txt": (NOTE_TEXT.encode("utf-16-be"), None),  # no BOM: NUL bytes, not text
        "d.txt": (b"\xef\xbb\xbf" + NOTE_TEXT.encode(), "utf-8"),
        "e.txt": (bytes([0x81, 0x8D]) + b" undefined in 1252" * 4, "cp1252"),
    }
    for name, (body, encoding) in texts.items():
        found = decode(body)
        assert (found.encoding if found else None) == encoding, name
        streamed = TextSniff()
        for start in range(0, len(body), chunk):
            streamed.feed(body[start : start + chunk])
        assert streamed.encoding() == encoding, name
        want = Sniffed("document", "text/csv" if name.endswith("csv") else "text/plain", "")
        got = sniffed(body, name, chunk)
        assert (got is None) == (encoding is None), name
        assert got is None or (got.kind, got.mime) == (want.kind, want.mime)
    assert text_of(CSV_1252) == CSV_TEXT and text_of(NOTE_16) == NOTE_TEXT
    # the five bytes Windows-1252 leaves undefined are read as Latin-1, nothing is lost
    line = b"Preis: 5 \x80 f\xfcr Code \x8d, bitte sofort zahlen\n"
    assert text_of(line * 9) == "Preis: 5 € für Code \x8d, bitte sofort zahlen\n" * 9


def test_binaries_stay_refused_whatever_their_name() -> None:
    program = Path(sys.executable).resolve().read_bytes()[:1_000_000]
    bodies = {
        "program": program,
        "compressed": compressed(),
        "png": make_png(40, 30),
        "utf-16 bom then binary": b"\xff\xfe" + compressed(),
        "odd utf-16": NOTE_16 + b"!",
    }
    for what, body in bodies.items():
        assert decode(body) is None, what
        found = sniffed(body, "notes.txt", 4096)
        assert found is None or found.kind == "photo", what  # the PNG is a photo, never text
    assert sniffed(make_pdf(["x"]), "notes.txt", 4096) == Sniffed(
        "document", "application/pdf", "pdf"
    )


async def test_telegram_reads_windows_1252_and_utf_16_and_names_the_encoding(
    home: Path,
) -> None:
    async with senses_running(home) as run:
        run.model.script(Text("Two prices."), Text("A greeting."))
        run.fake.files.push_document(ALICE, CSV_1252, "prices.csv", "text/csv", caption="?")
        await run.wait_text(ALICE, "Two prices.")
        asked = last_user_text(run.model.requests[-1])
        assert "Käse;3,50\nBrötchen;0,45" in asked and "\ufffd" not in asked
        assert '(CSV, 3 rows, 2 columns, separated by ";", read as Windows-1252)' in asked

        run.fake.files.push_document(ALICE, NOTE_16, "gruss.txt", "text/plain")
        await run.wait_text(ALICE, "A greeting.")
        asked = last_user_text(run.model.requests[-1])
        assert "Grüße aus Köln – 20 € bitte" in asked and "(text, read as UTF-16)" in asked


def test_utf8_with_a_stray_byte_stays_utf8_and_the_byte_is_read_as_windows_1252() -> None:
    """A UTF-8 file with one broken sequence (a stray Latin-1 byte, a character cut at
    the end) read as Windows-1252 garbled every other umlaut ("KÃ¤se"); each of its
    bytes is read as Windows-1252 now, every UTF-8 character as written."""
    lines = "Käse;Brötchen;Grüße\n" * 3
    stray = decode(lines.encode() + b"Caf\xe9 au lait\n")
    assert stray is not None and stray.encoding == "utf-8" and stray.legacy == 1
    assert stray.text == lines + "Café au lait\n"
    assert stray.shown == "UTF-8 (1 byte not UTF-8, read as Windows-1252)"
    cut = decode((lines + "Grü").encode()[:-1])
    assert cut is not None and cut.text == lines + "Gr\u00c3" and cut.legacy == 1
    plain = decode("Käse;3,50\n".encode("cp1252"))  # no valid UTF-8 beside: Windows-1252
    assert plain is not None and (plain.encoding, plain.text) == ("cp1252", "Käse;3,50\n")


def test_more_legacy_bytes_than_utf8_letters_keep_the_utf8_ones() -> None:
    """atk38 F3: a few Windows-1252 accents and a UTF-8 line read the whole file as
    Windows-1252, so a secret written in UTF-8 reached the model as 'pÃ¤sswÃ¶rd'
    (the masker never saw the value). Each part is read as written now."""
    body = "Notizen: été, Café, über, Straße\n".encode("cp1252") + "pässwörd-Ω42x\n".encode()
    found = decode(body)
    assert found is not None and found.encoding == "utf-8" and found.legacy == 5
    assert found.text == "Notizen: été, Café, über, Straße\npässwörd-Ω42x\n"
    streamed = TextSniff()
    for start in range(0, len(body), 5):
        streamed.feed(body[start : start + 5])
    assert streamed.encoding() == "utf-8"


def test_utf8_japanese_or_russian_with_one_stray_byte_is_text() -> None:
    """atk38 F8: UTF-8 continuation bytes (E3 81 xx, D1 8F) were counted as control
    characters before the UTF-8 reading, so such a file was refused as not text."""
    for line in ("こんにちは、世界。ありがとうございます。\n", "Съешь же ещё этих мягких булок\n"):
        body = (line * 20).encode() + b"\xff" + (line * 20).encode()
        found = decode(body)
        assert found is not None and found.encoding == "utf-8" and found.legacy == 1, line
        assert found.text == line * 20 + "\u00ff" + line * 20
        streamed = TextSniff()
        streamed.feed(body)
        assert streamed.encoding() == "utf-8"


async def test_telegram_refuses_a_binary_named_text_and_keeps_the_character_limit(
    home: Path,
) -> None:
    async with senses_running(home, limits={"document_chars": 1000}) as run:
        run.fake.files.push_document(ALICE, compressed(), "data.csv", "text/csv")
        await run.wait_text(ALICE, "📎 data.csv is not a text file, whatever its name says.")
        # text for its first 64 KB, a NUL byte after: the decoder reads it all and refuses
        late = CSV_1252 * 3000 + b"\x00"
        run.fake.files.push_document(ALICE, late, "late.csv", "text/csv")
        await run.wait_text(ALICE, "📎 late.csv is not a text file, whatever its name says.")
        assert run.model.requests == []

        run.model.script(Text("Long list."))
        run.fake.files.push_document(ALICE, CSV_1252 * 200, "long.csv", "text/csv")
        reply = await run.wait_text(ALICE, "Long list.")
        assert reply.startswith("📎 long.csv is long: I read the first 1,000 of")
        assert "Käse;3,50" in last_user_text(run.model.requests[-1])


async def test_the_web_upload_takes_windows_1252_and_utf_16_and_refuses_binaries(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch) as s:
        s.fake.script(Text("Read both."))
        status, csv = await s.upload(CSV_1252, "prices.csv", "text/csv")
        assert status == 200 and (csv["kind"], csv["mime"]) == ("document", "text/csv"), csv
        status, note = await s.upload(NOTE_16, "gruss.txt", "text/plain")
        assert status == 200 and (note["kind"], note["mime"]) == ("document", "text/plain")
        status, refused = await s.upload(compressed(), "data.csv", "text/csv")
        assert status == 415 and "cannot read this kind of file" in refused["error"]

        status, reply = await s.chat(
            {"text": "what is in them?", "attachments": [csv["id"], note["id"]]}
        )
        assert status == 200 and reply["reply"] == "Read both.", reply
        asked = last_user_text(s.fake.requests[-1])
        assert "Käse;3,50" in asked and "read as Windows-1252" in asked
        assert "Grüße aus Köln – 20 € bitte" in asked and "read as UTF-16" in asked


async def test_attach_in_the_terminal_takes_a_windows_1252_csv(
    home: Path, fake: FakeOpenAI, term: Terminal, tmp_path: Path
) -> None:
    src = tmp_path / "prices.csv"
    src.write_bytes(CSV_1252)
    fake.script(Text("Cheese is 3.50."))
    await term.start(["chat"], env_for(home, fake))
    await term.see("you>")
    term.type(f"/attach {src}" + ENTER)
    await term.see("goes with your next message")
    term.type("what does cheese cost?" + ENTER)
    await term.see("Cheese is 3.50.")
    said = last_user_text(fake.requests[-1])
    assert "Käse;3,50" in said and "read as Windows-1252" in said
    [copy] = inbox_files(home)
    assert copy.read_bytes() == CSV_1252  # the file itself is kept as it came


def test_a_windows_1252_letter_before_a_symbol_keeps_the_file_windows_1252() -> None:
    """atk39 F8: in a Windows-1252 file "ß§" or "ß“" (DF A7, DF 93) is valid UTF-8, so the
    mixed reading made it one N'Ko character: the text was garbled and a vault value holding
    the pair was not masked. Such a file is read as Windows-1252 throughout again."""
    from bridge.loadout.mask import Masker

    for value, around in (("Paß§wort-Größe", "Zugang: {}\n"), ("Kennwort-Fuß“99", "„{}\n")):
        body = around.format(value).encode("cp1252")
        found = decode(body)
        assert found is not None and (found.encoding, found.text) == (
            "cp1252",
            body.decode("cp1252"),
        )
        assert Masker({"PW": value}).mask(found.text) == around.format("[vault:PW]")
        streamed = TextSniff()
        for start in range(0, len(body), 3):
            streamed.feed(body[start : start + 3])
        assert streamed.encoding() == "cp1252"
    # a UTF-8 Hebrew line with one stray byte stays UTF-8 (more letters than stray bytes)
    hebrew = "שלום עולם, מה שלומך היום?\n".encode()
    found = decode(hebrew + b"\xe9" + hebrew)
    assert found is not None and found.encoding == "utf-8" and found.legacy == 1

"""Oversize, corrupt and unsupported files get clear replies and never crash a turn;
a turn runs on what could be read. Through the core (web-shaped messages), the real
pipeline and real files; the refusals from Telegram's limits go through the fake Bot API."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Attachment, AttachmentKind, Inbound
from tests.conftest import ScriptedBackend
from tests.fakes.fake_openai import Text
from tests.senses.conftest import senses_running
from tests.senses.hostile import png_claiming
from tests.senses.samples import make_pdf, make_png
from tests.telegram.conftest import ALICE


def saved(roost: Roost, data: bytes, suffix: str) -> str:
    inbox = roost.tenant_dirs("local").inbox
    inbox.mkdir(mode=0o700, exist_ok=True)
    path = inbox / (os.urandom(8).hex() + suffix)
    path.write_bytes(data)
    return str(path)


def sent(
    roost: Roost, data: bytes, name: str, mime: str, kind: AttachmentKind = "document", text=""
) -> Inbound:
    att = Attachment(kind, saved(roost, data, Path(name).suffix), mime, name, len(data))
    return Inbound("web", "local", "c1", text, os.urandom(4).hex(), attachments=(att,))


def model(roost: Roost) -> ScriptedBackend:
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    return backend


@pytest.fixture
async def seeing(home: Path) -> AsyncIterator[Roost]:
    """A roost whose default model can see (`[llm] vision = true`)."""
    made = await build(
        load_settings(llm={"vision": True}), backend=ScriptedBackend(), audit=MemoryAudit()
    )
    yield made
    await made.aclose()


CASES = [
    (make_pdf(["x"], password="pw"), "a.pdf", "application/pdf", "is protected with a password"),
    (b"%PDF-1.7\n garbage \x00\x01 trailer", "b.pdf", "application/pdf", "not a valid PDF"),
    (b"hello, not a pdf", "c.pdf", "application/pdf", "not a valid PDF"),
    (make_pdf([""]), "scan.pdf", "application/pdf", "has no text I can read"),
    (make_png(10, 10), "notes.txt", "text/plain", "is not a text file"),
    (b"PK\x03\x04 zip", "report.docx", "application/vnd.openxmlformats", "I read PDF, plain"),
    (b"", "empty.txt", "text/plain", "is empty"),
]


@pytest.mark.parametrize(("data", "name", "mime", "said"), CASES)
async def test_unreadable_documents_get_a_clear_reply(
    roost: Roost, data: bytes, name: str, mime: str, said: str
) -> None:
    final = await roost.core.handle(sent(roost, data, name, mime, text="what is in it?"))
    assert final.kind == "refusal" and said in final.text
    assert model(roost).requests == []  # no model was asked


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xff\xd8\xff\xe0 not really a jpeg", "the file is damaged"),
        (make_png(100, 100)[:80], "the file is damaged"),
        (b"<html><script>alert(1)</script>", "I open JPEG, PNG, WebP and GIF"),
        (png_claiming(8000, 6000), "8000×6000 pixels"),
    ],
)
async def test_unreadable_photos_get_a_clear_reply(seeing: Roost, data: bytes, said: str) -> None:
    final = await seeing.core.handle(sent(seeing, data, "p.jpg", "image/jpeg", "photo"))
    assert final.kind == "refusal" and said in final.text, final.text
    assert model(seeing).requests == []


async def test_the_turn_runs_on_what_could_be_read(roost: Roost) -> None:
    good = Attachment("document", saved(roost, b"a,b\n1,2\n", ".csv"), "text/csv", "good.csv", 8)
    bad = Attachment("document", saved(roost, b"PK\x03\x04", ".zip"), "application/zip", "x.zip")
    outside = Attachment("document", str(roost.settings.home / "roost.db"), "text/plain", "db.txt")
    model(roost).steps.append("Read the CSV.")
    inbound = Inbound("web", "local", "c1", "", "m1", attachments=(good, bad, outside))
    final = await roost.core.handle(inbound)
    assert final.kind == "answer"
    assert final.text.startswith("📎 I cannot read x.zip: I read PDF")
    assert "📎 db.txt could not be received" in final.text and final.text.endswith("Read the CSV.")
    asked = model(roost).requests[-1].messages[-1].content
    assert "CSV, 2 rows, 2 columns" in asked and "1,2" in asked
    assert "[not read, and the person was told: 📎 I cannot read x.zip" in asked
    assert "SQLite" not in asked


async def test_json_is_validated_and_text_not_utf8_read_as_windows_1252(roost: Roost) -> None:
    model(roost).steps.extend(["ok", "ok", "ok"])
    await roost.core.handle(sent(roost, b'{"a": 1,}', "d.json", "application/json"))
    asked = model(roost).requests[-1].messages[-1].content
    assert "(JSON, not valid: Expecting property name enclosed in double quotes at line 1)" in asked
    await roost.core.handle(sent(roost, b"caf\xe9 \xe0 la cr\xe8me ok", "n.txt", "text/plain"))
    asked = model(roost).requests[-1].messages[-1].content
    assert "(text, read as Windows-1252)" in asked and "café à la crème ok" in asked
    # a file that mixes both: each UTF-8 character as written, the other bytes as 1252
    mixed = b"caf\xe9 " + "Grüße".encode() + b" ok"
    await roost.core.handle(sent(roost, mixed, "m.txt", "text/plain"))
    asked = model(roost).requests[-1].messages[-1].content
    assert "(text, read as UTF-8 (1 byte not UTF-8, read as Windows-1252))" in asked
    assert "café Grüße ok" in asked


async def test_telegram_files_over_the_limits_are_never_fetched(home: Path) -> None:
    async with senses_running(home, limits={"attachment_bytes": 1_048_576}) as run:
        big = b"x" * 2_000_000
        run.fake.files.push_document(ALICE, big, "big.txt", "text/plain")
        reply = await run.wait_text(ALICE, "big.txt is 1.9 MB")
        assert "I can read files up to 1.0 MB" in reply
        assert run.fake.calls_of("getFile") == []  # refused before getFile

        # the size Telegram declared was wrong: stopped while downloading
        run.fake.files.push_document(ALICE, big, "liar.txt", "text/plain", claimed=1000)
        await run.wait_text(ALICE, "liar.txt is")
        assert len(run.fake.calls_of("getFile")) == 1
        assert list(run.roost.tenant_dirs("alice").inbox.iterdir()) == []  # nothing half-kept


async def test_telegram_refuses_files_over_its_20_mb(home: Path) -> None:
    async with senses_running(home, limits={"attachment_bytes": 50_000_000}) as run:
        huge = b"y" * 20_000_001
        run.fake.files.push_document(ALICE, huge, "huge.csv", "text/csv", claimed=1000)
        reply = await run.wait_text(ALICE, "huge.csv is")
        assert "I can read files up to 19.1 MB" in reply
        assert run.fake.files.downloads == {}
        run.model.script(Text("fine"))
        run.fake.push_text(ALICE, "hello")
        await run.wait_text(ALICE, "fine")  # nothing was broken


async def test_a_vault_value_across_the_documents_cut_is_not_sent_in_part(
    roost: Roost,
) -> None:
    """atk38 F6: the decoder cut the text at `document_chars` before the turn masked it, so a
    vault value across the cut reached the model as its first characters (12 of 20)."""
    from bridge.loadout import vault

    value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
    vault.set_value(roost.tenant_dirs("local"), "API", value)
    limit = roost.settings.limits.document_chars
    body = ("a" * (limit - 12 - len("key=")) + "key=" + value + "\nmore\n").encode()
    model(roost).steps.extend(["ok", "ok"])
    await roost.core.handle(sent(roost, body, "notes.txt", "text/plain"))
    asked = model(roost).requests[-1].messages[-1].content
    assert "… [cut:" in asked and value[:4] not in asked, asked[-200:]
    whole = ("b" * 100 + "key=" + value + "\n").encode()  # a value inside the limit: masked
    await roost.core.handle(sent(roost, whole, "short.txt", "text/plain"))
    asked = model(roost).requests[-1].messages[-1].content
    assert "key=[vault:API]" in asked and value not in asked


async def test_a_vault_value_across_the_pdf_page_limit_is_not_sent_in_part(home: Path) -> None:
    """atk39 F6: reading stopped at `document_pages` sent the last page read whole, so a
    value going on past that page reached the model as its first characters (12 of 20)."""
    from bridge.loadout import vault

    made = await build(
        load_settings(limits={"document_pages": 2}), backend=ScriptedBackend(), audit=MemoryAudit()
    )
    try:
        value = "Rt5pLm8Qz2Wx7Nv4Kb9J"
        vault.set_value(made.tenant_dirs("local"), "API", value)
        pdf = make_pdf(["page one", f"intro key={value[:12]}", f"{value[12:]} rest"])
        model(made).steps.append("ok")
        await made.core.handle(sent(made, pdf, "a.pdf", "application/pdf"))
        asked = model(made).requests[-1].messages[-1].content
        assert "the text of the first 2 read" in asked and "intro key=" in asked, asked
        assert value[:4] not in asked, asked
    finally:
        await made.aclose()

"""Hostile files through a whole turn: each gets a reply naming the limit it broke (and
the `[limits]` key), no model is asked for a file nothing could be read of, a 40-
megapixel image costs the daemon no memory, and closing the roost ends its decoders.

Through the core with the real pipeline, real decoder processes and real files (the
web-shaped messages of tests/senses/test_refusals.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import load_settings
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import AttachmentKind
from tests.conftest import ScriptedBackend
from tests.senses.hostile import dense_pdf, many_scans_jpeg, png_claiming, webp_lossless
from tests.senses.test_decoders import gone
from tests.senses.test_refusals import model, sent


async def seeing_roost(**limits: object) -> Roost:
    settings = load_settings(llm={"vision": True}, limits=limits)
    return await build(settings, backend=ScriptedBackend(), audit=MemoryAudit())


@pytest.fixture
async def seeing(home: Path) -> AsyncIterator[Roost]:
    made = await seeing_roost(decode_seconds=2)
    yield made
    await made.aclose()


@pytest.mark.parametrize(
    ("data", "name", "kind", "said"),
    [
        (png_claiming(50_000, 50_000), "p.png", "photo", "50000×50000 pixels"),
        (webp_lossless(16_384, 16_384), "w.webp", "photo", "[limits] image_max_pixels"),
        (many_scans_jpeg(512, 512, 2000), "s.jpg", "photo", "progressive JPEG of more than 100"),
        (dense_pdf(), "slow.pdf", "document", "[limits] decode_seconds"),
    ],
)
async def test_a_bomb_gets_a_reply_naming_the_limit(
    seeing: Roost, data: bytes, name: str, kind: AttachmentKind, said: str
) -> None:
    mime = "application/pdf" if kind == "document" else "image/png"
    final = await seeing.core.handle(sent(seeing, data, name, mime, kind, "what is it?"))
    assert final.kind == "refusal" and said in final.text, final.text
    assert model(seeing).requests == []


def reset_peak() -> int:
    """Start the peak RSS again from now (Linux: clear_refs 5); the peak it starts from."""
    Path("/proc/self/clear_refs").write_text("5")
    return peak_kib()


def peak_kib() -> int:
    with open("/proc/self/status") as fh:
        line = next(row for row in fh if row.startswith("VmHWM:"))
    return int(line.split()[1])


async def test_a_40_megapixel_image_costs_the_daemon_no_memory(home: Path) -> None:
    roost = await seeing_roost(decode_seconds=600)  # only a bound against a hang
    try:
        bomb = webp_lossless(6300, 6300)  # 32 bytes; 39.7 megapixels, under the limit
        model(roost).steps.append("a green square")
        before = reset_peak()
        final = await roost.core.handle(sent(roost, bomb, "g.webp", "image/webp", "photo", "?"))
        grown_mib = (peak_kib() - before) // 1024
        assert final.text == "a green square"
        (image,) = model(roost).requests[-1].messages[-1].images
        assert image.mime == "image/jpeg" and len(image.data) < 200_000
        # decoded in the daemon this took 600 MiB and kept most of it; here a decoder did
        assert grown_mib < 64, grown_mib
    finally:
        await roost.aclose()


async def test_closing_the_roost_ends_its_decoders(home: Path) -> None:
    roost = await seeing_roost()
    model(roost).steps.append("ok")
    photo = webp_lossless(640, 480)
    final = await roost.core.handle(sent(roost, photo, "g.webp", "image/webp", "photo", "?"))
    assert final.text == "ok"
    spares = roost.senses.decoders.pids
    assert spares  # one decoder kept ready for the next file
    await roost.aclose()
    assert all(gone(pid) for pid in spares) and roost.senses.decoders.pids == []

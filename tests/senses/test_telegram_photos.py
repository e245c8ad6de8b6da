"""Photos from Telegram reach the model as image parts, downscaled and without EXIF;
a model that cannot see gets no turn; the history keeps only a placeholder."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.fakes.fake_openai import Text
from tests.senses.conftest import senses_running
from tests.senses.samples import make_jpeg
from tests.telegram.conftest import ALICE


async def test_a_photo_reaches_the_model_as_an_image_part_downscaled(home: Path) -> None:
    async with senses_running(home) as run:
        run.model.script(Text("A grey gradient, darker on the left."))
        photo = make_jpeg(4000, 3000)
        run.fake.files.push_photo(ALICE, photo, caption="What is on this photo?")
        await run.wait_text(ALICE, "A grey gradient")

        assert len(run.model.images) == 1
        seen = run.model.images[0]
        assert (seen.width, seen.height) == (1568, 1176)  # the longer side at image_max_side
        assert seen.mime == "image/jpeg" and not seen.exif  # camera and GPS data gone
        user = run.model.requests[-1]["messages"][-1]
        texts = [p["text"] for p in user["content"] if p["type"] == "text"]
        assert texts == ["[image: 1 photo]\n\nWhat is on this photo?"]
        # the largest size was fetched, not a thumbnail
        assert max(run.fake.files.downloads.values()) == len(photo)
        inbox = run.roost.tenant_dirs("alice").inbox
        assert [p.read_bytes() for p in inbox.iterdir()] == [photo]

        run.model.script(Text("Still grey."))
        run.fake.push_text(ALICE, "And the colours?")
        await run.wait_text(ALICE, "Still grey.")
        history = run.model.requests[-1]["messages"]
        assert all(isinstance(m["content"], str) for m in history)  # no image any more
        assert "[image: 1 photo]\n\nWhat is on this photo?" in [m["content"] for m in history]
        assert len(run.model.images) == 1
        stored = sqlite3.connect(home / "roost.db").execute(
            "SELECT group_concat(content, '') FROM session_messages"
        )
        blob = stored.fetchone()[0]
        assert "[image: 1 photo]" in blob and "base64" not in blob


async def test_a_photo_without_a_caption_is_enough(home: Path) -> None:
    async with senses_running(home, limits={"image_max_side": 512}) as run:
        run.model.script(Text("A photo."))
        run.fake.files.push_photo(ALICE, make_jpeg(600, 900))
        await run.wait_text(ALICE, "A photo.")
        assert (run.model.images[0].width, run.model.images[0].height) == (341, 512)
        events = [e for e in run.audit.events if e[0] == "message.received"]
        details = events[-1][2]
        assert details["attachments"] == 1 and details["attachment_kinds"] == "photo"
        assert "name" not in str(details) and "photo.jpg" not in str(details)


async def test_a_model_that_cannot_see_is_not_asked(home: Path) -> None:
    extra = {"models": {"eyes": {"provider": "offline", "vision": True}}}
    async with senses_running(home, vision=False, **extra) as run:
        run.fake.files.push_photo(ALICE, make_jpeg(800, 600), caption="what is this?")
        reply = await run.wait_text(ALICE, "cannot see images")
        assert "/model eyes" in reply
        assert run.model.requests == []

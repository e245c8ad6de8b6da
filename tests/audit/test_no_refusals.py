"""What roost emits, the chain keeps whole: no field refused, none unknown.

Through the real chain (its writer logs "refused fields [...], N unknown" for
anything its schema does not take): a web message with a photo and a document
(the upload path's `message.received` fields), a scheduled turn (whose message
id is the job's `job:<id>:<slot>`), and ordinary turns and commands. Every
other test checks the field names of what it makes roost emit
(`audit_fields_agree` in tests/conftest.py); here the values count too.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import pytest

from bridge.app.build import build
from bridge.app.schedule_loop import ScheduleLoop
from bridge.core.config import Settings
from bridge.types.messages import Attachment, Inbound
from tests.conftest import Clock, ScriptedBackend
from tests.masking import m
from tests.senses.samples import make_pdf, make_png


def _saved(inbox: Path, data: bytes, suffix: str) -> str:
    inbox.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = inbox / (uuid.uuid4().hex[:16] + suffix)
    path.write_bytes(data)
    return str(path)


async def test_nothing_roost_emits_is_refused(
    settings: Settings, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    roost = await build(settings, backend=ScriptedBackend("one", "two"), clock=clock)
    try:
        inbox = roost.tenant_dirs("local").inbox
        png, pdf = make_png(20, 20), make_pdf(["the notes"])
        files = (
            Attachment("photo", _saved(inbox, png, ".png"), "image/png", "a.png", len(png)),
            Attachment(
                "document", _saved(inbox, pdf, ".pdf"), "application/pdf", "n.pdf", len(pdf)
            ),
        )
        with caplog.at_level(logging.WARNING, logger="bridge.audit.chain"):
            await roost.core.handle(
                Inbound("web", "local", "c1", "look", uuid.uuid4().hex, attachments=files)
            )
            await roost.core.handle(
                Inbound("cli", "local", "terminal", "/status", uuid.uuid4().hex)
            )
            job = await roost.schedule.jobs.create(
                tenant="local", channel="web", chat="c1", kind="turn", spec="",
                payload=m("brief me"), tz="UTC", next_run_ms=0, created_ms=0,
            )  # fmt: skip
            posted = await ScheduleLoop(roost).runner(job, 1_800_000_000_000)
            assert posted == f"🔁 brief me (job {job.id})\ntwo"
    finally:
        await roost.aclose()
    refused = [r.getMessage() for r in caplog.records if "refused fields" in r.getMessage()]
    assert refused == []
    chain = (settings.home / "audit/chain.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in chain]
    received = [r["details"] for r in records if r["event"] == "message.received"]
    assert received[0]["attachments"] == 2 and received[0]["attachment_kinds"] == "document,photo"
    assert received[-1]["msg_id"].startswith("job:")  # the scheduled turn's own id

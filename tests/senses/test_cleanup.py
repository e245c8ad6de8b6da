"""The inbox sweep: attachments go after `[limits] attachment_keep_hours` (an injected
clock), a copy a tool kept elsewhere in the workspace stays, other tenants' too."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bridge.app.build import Roost
from bridge.types.messages import Attachment, Inbound
from tests.conftest import ScriptedBackend

HOUR = 3600.0


def received(roost: Roost, tenant: str, name: str, at: float) -> Path:
    inbox = roost.tenant_dirs(tenant).inbox
    inbox.mkdir(mode=0o700, exist_ok=True)
    path = inbox / name
    path.write_text("a,b\n1,2\n")
    os.utime(path, (at, at))
    return path


async def test_old_attachments_go_kept_copies_stay(roost: Roost) -> None:
    t0 = 1_800_000_000.0
    old = received(roost, "local", "0a1b2c3d4e5f6a7b.csv", t0)
    newer = received(roost, "local", "1111222233334444.csv", t0 + 10 * HOUR)
    other = received(roost, "bob", "5555666677778888.csv", t0)
    kept = roost.tenant_dirs("local").workspace / "kept" / "spend.csv"
    kept.parent.mkdir()
    shutil.copy2(old, kept)  # a tool copied it (same mtime as the original)
    (roost.tenant_dirs("local").inbox / "sub").mkdir()  # a tool's own folder: left alone

    assert roost.senses.sweep(t0 + 71 * HOUR) == 0
    assert roost.senses.sweep(t0 + 73 * HOUR) == 2
    assert not old.exists() and not other.exists()
    assert newer.exists() and kept.read_text() == "a,b\n1,2\n"
    assert (roost.tenant_dirs("local").inbox / "sub").is_dir()
    assert roost.senses.sweep(t0 + 83 * HOUR) == 1 and not newer.exists()


async def test_a_swept_attachment_is_said_gone(roost: Roost) -> None:
    path = received(roost, "local", "9999000011112222.txt", 1_000.0)
    roost.senses.sweep(1_000.0 + 100 * HOUR)
    att = Attachment("document", str(path), "text/plain", "notes.txt", 8)
    final = await roost.core.handle(Inbound("web", "local", "c1", "", "m1", attachments=(att,)))
    assert final.kind == "refusal" and "notes.txt is no longer there" in final.text
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend) and backend.requests == []

"""Hostile uploads get a clear 4xx or 507, never a 500, and nothing is logged raw.

Sent as raw HTTP over a socket to the real web channel (the daemon's own factory),
so the bytes are exactly what a hostile client sends: a NUL in the file name of
the part's `Content-Disposition`, 1 MB of part headers, 5,000 part headers (all
of which aiohttp refuses while it parses the part), and an upload that meets a
full disk (the writes fail at the I/O seam with ENOSPC, as tests/spine/
test_disk_full.py does). The partial file never stays in the inbox.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
from pathlib import Path

import pytest

from tests.spine.test_web_upload import TOKEN, files_in, served

BOUNDARY = "hostile-boundary"
DISPOSITION = b'Content-Disposition: form-data; name="file"; filename="notes.txt"'


def multipart(part_headers: bytes, content: bytes = b"hello\n") -> bytes:
    return (
        f"--{BOUNDARY}\r\n".encode()
        + part_headers
        + b"\r\n\r\n"
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


async def raw_upload(port: int, body: bytes) -> tuple[int, dict[str, object]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {TOKEN}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    writer.write(head + body)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    status_line, _, rest = answer.partition(b"\r\n")
    payload = rest.split(b"\r\n\r\n", 1)[1]
    return int(status_line.split()[1]), json.loads(payload)


HOSTILE = {
    "a NUL in the file name": DISPOSITION.replace(b"notes", b"no\x00tes"),
    "1 MB of part headers": DISPOSITION + b"\r\nX-Pad: " + b"a" * 1_048_576,
    "5,000 part headers": DISPOSITION + b"".join(b"\r\nX-H%d: v" % i for i in range(5000)),
}


@pytest.mark.parametrize("label", list(HOSTILE))
async def test_hostile_part_headers_get_a_400_and_are_never_logged(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, label: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with served(home, monkeypatch, factory=True) as s:
        status, body = await raw_upload(s.web.port, multipart(HOSTILE[label]))
        assert status == 400, (label, body)
        assert "part headers cannot be read" in str(body["error"])
        assert files_in(s.inbox()) == []
        # the server still works for the next, well-formed upload
        ok, up = await s.upload(b"fine\n", "fine.txt", "text/plain")
        assert ok == 200, up
    logged = "\n".join(r.getMessage() + str(r.exc_info or "") for r in caplog.records)
    assert "no\x00tes" not in logged and "X-Pad" not in logged and "X-H4999" not in logged
    assert "Error handling request" not in logged


async def test_an_upload_that_meets_a_full_disk_gets_507_and_leaves_nothing(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with served(home, monkeypatch, factory=True) as s:
        real_write = os.write
        inbox = str(s.inbox())

        def no_space(fd: int, data: object) -> int:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(inbox):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_write(fd, data)  # type: ignore[arg-type]

        with monkeypatch.context() as m:
            m.setattr(os, "write", no_space)
            status, body = await s.upload(b"x" * 100_000, "notes.txt", "text/plain")
        assert status == 507 and "the disk is full" in str(body["error"]), body
        assert files_in(s.inbox()) == []  # the partial file is gone
        status, _ = await s.upload(b"x" * 100_000, "notes.txt", "text/plain")
        assert status == 200  # space again: uploads work

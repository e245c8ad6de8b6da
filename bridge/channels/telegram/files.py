"""The files of a reply, sent to a Telegram chat as photos or documents.

Each `OutFile` is opened the checked way (`bridge.core.outfiles`: no
symbolic link, a regular file), and uploaded with `sendDocument` (a
multipart request) through the chat's `Sender`, so it is paced and retried
like any message; a JPEG, PNG or WebP image of at most 10 MB goes with
`sendPhoto` instead (shown inline), and as a document when Telegram
refuses it as a photo (its sides, say). A file over Telegram's 50 MB bot upload limit is not
uploaded (Telegram would answer 413): the chat gets a line saying so and
what to do. A failed upload is counted (`Sender.failed("document")`) and
logged, the other files still go, and `send_files` returns a line for each
file that did not arrive (`missed`: gone from disk, refused, Telegram
unreachable, or sent without an answer, which is never repeated), which the
reply tells the person (or keeps in the outbox when even that fails).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from bridge.channels.common.render import Rendered
from bridge.channels.telegram.send import DeliveryError, Rejected, Sender, Unconfirmed
from bridge.core.outfiles import OutFileError, open_out_file
from bridge.types.messages import OutFile

log = logging.getLogger(__name__)
UPLOAD_LIMIT = 50 * 1024 * 1024  # what a bot may send through the Bot API
PHOTO_LIMIT = 10_000_000  # what Telegram takes as a photo
PHOTO_MIMES = frozenset({"image/jpeg", "image/png", "image/webp"})


def too_large(out: OutFile, size: int) -> str:
    return (
        f"📎 {out.name} is {size / 1_048_576:.1f} MB, more than the 50 MB a Telegram bot may "
        "send. Ask the operator of this roost to hand it to you another way."
    )


def read_limited(out: OutFile, limit: int) -> bytes | int:
    """The file's bytes, or its size when it is over `limit` (nothing read then)."""
    fd = open_out_file(out.path.parent, out.path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            return size
        return fh.read()


def missed(out: OutFile, why: str) -> str:
    """The line that tells the person a file did not arrive."""
    return f"📎 {out.name} could not be sent ({why}). Ask me for it again later."


async def send_files(
    sender: Sender, chat_id: int, files: Sequence[OutFile], limit: int = UPLOAD_LIMIT
) -> list[str]:
    """Send each file as a photo or document; returns a line for each that did not arrive."""
    problems: list[str] = []
    for out in files:
        try:
            data = read_limited(out, limit)
            if isinstance(data, int):
                await sender.send(chat_id, Rendered(too_large(out, data)))
                continue
            await _upload(sender, chat_id, data, out)
        except OutFileError as exc:
            log.warning("chat %s: a file was not sent: %s", chat_id, exc)
            problems.append(missed(out, "it is no longer there"))
        except Unconfirmed as exc:  # it may have arrived: not sent again
            sender.failed("unconfirmed")
            log.warning("chat %s: a file is unconfirmed: %s", chat_id, exc)
            problems.append(
                f"📎 Telegram did not confirm that {out.name} arrived. If it is missing, "
                "ask me for it again."
            )
        except DeliveryError as exc:
            sender.failed("document")
            log.error("chat %s: a file was not delivered: %s", chat_id, exc)
            why = "Telegram refused it" if isinstance(exc, Rejected) else "Telegram failed"
            problems.append(missed(out, why))
    return problems


async def _upload(sender: Sender, chat_id: int, data: bytes, out: OutFile) -> None:
    """A photo when Telegram takes it as one, else a document."""
    if out.mime in PHOTO_MIMES and len(data) <= PHOTO_LIMIT:
        try:
            await sender.photo(chat_id, data, out.name)
            return
        except Rejected as exc:
            log.info("chat %s: an image went as a document (%s)", chat_id, exc)
    await sender.document(chat_id, data, out.name)

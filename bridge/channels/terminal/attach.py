"""Files from the terminal: `/attach PATH`, and paths dropped into the prompt.

The terminal runs as the operator's own user on the machine that holds the
file, so reading a file the person names is theirs to allow; what the model
and the tools get is never that path but a copy in the tenant's
`workspace/inbox` (`cli-<32 hex>.<ext>`, mode 0600), made the way a web
upload is stored: streamed through `common.spool.Spool`, counted against
`[limits] attachment_bytes` (checked before and while copying), its type
sniffed from the bytes by `web_sniff.Sniffer` (the name chooses only the
flavour of text), anything else refused with the list of what roost reads.
Only regular files are read (opened with `O_NONBLOCK`, then `fstat`: a FIFO
or a device is refused without a read). The copy then goes with the next message
as `Inbound.attachments`, through the same senses pipeline as Telegram's and
the web page's files. At most `MAX_PER_MESSAGE` files go with one message.

`/attach PATH` and `/detach` are answered here (`local_command`), never sent
to the core; paths dropped into a line (`cli_paths.dropped`) are attached by
`attach_dropped`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

from bridge.channels.common.sniff import SUPPORTED, Sniffer
from bridge.channels.terminal.paths import dropped, local_path, words
from bridge.types.messages import Attachment

CHUNK = 64 * 1024
MAX_PER_MESSAGE = 10  # as web_upload.MAX_PER_MESSAGE: one message, at most ten files


class AttachError(ValueError):
    """A file that cannot go with a message; the text says why, for the person."""


def size_words(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / 1_048_576:.1f} MB"


class Attacher:
    """The files waiting for the next message of one `roost chat`, copied into `inbox`."""

    def __init__(self, inbox: Path, max_bytes: Callable[[], int]) -> None:
        self.inbox, self._max_bytes = inbox, max_bytes
        self.pending: list[Attachment] = []

    def add(self, path: Path) -> Attachment:
        """Copy `path` into the inbox and keep it for the next message; AttachError says why not."""
        if len(self.pending) >= MAX_PER_MESSAGE:
            raise AttachError(f"📎 at most {MAX_PER_MESSAGE} files go with one message")
        try:
            att = copy_in(path, self.inbox, self._max_bytes())
        except OSError as exc:  # the inbox: a full disk, a lost directory
            why = exc.strerror or type(exc).__name__
            raise AttachError(f"📎 {path.name!r} could not be copied ({why})") from None
        self.pending.append(att)
        return att

    def take(self) -> tuple[Attachment, ...]:
        """The waiting files, for the message being sent now (and none waits after it)."""
        out, self.pending = tuple(self.pending), []
        return out

    def drop(self) -> int:
        """Forget the waiting files (their copies go with the inbox sweep); how many."""
        count = len(self.pending)
        for att in self.take():
            Path(att.path).unlink(missing_ok=True)
        return count


def _open_regular(path: Path, limit: int) -> int:
    """An open descriptor of a regular file within `limit`; AttachError otherwise."""
    shown = path.name or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise AttachError(f"📎 there is no file {shown!r}") from None
    except OSError as exc:
        raise AttachError(f"📎 {shown!r} cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise AttachError(f"📎 {shown!r} is not a plain file")
    if info.st_size > limit:
        os.close(fd)
        raise AttachError(_too_large(shown, limit))
    return fd


def _too_large(shown: str, limit: int) -> str:
    return f"📎 {shown!r} is too large (the limit is {limit:,} bytes: [limits] attachment_bytes)"


def copy_in(path: Path, inbox: Path, limit: int) -> Attachment:
    """A private copy of `path` in `inbox`, sniffed and counted as a web upload is."""
    from bridge.channels.common.spool import Spool, display_name

    fd = _open_regular(path, limit)
    ident = secrets.token_hex(16)
    spool, sniffer = Spool(inbox, ident), Sniffer()
    try:
        with os.fdopen(fd, "rb") as src:
            while chunk := src.read(CHUNK):
                if sniffer.size + len(chunk) > limit:  # it grew while being read
                    raise AttachError(_too_large(path.name, limit))
                sniffer.feed(chunk)
                spool.write(chunk)
        spool.finish()
        name = display_name(path.name, "file")
        found = sniffer.result(name)
        if found is None:
            raise AttachError(f"📎 roost cannot read {name!r}; it reads {SUPPORTED}")
    except BaseException:
        spool.discard()
        raise
    final = inbox / f"cli-{ident}.{found.ext}"
    spool.keep(final)
    return Attachment(found.kind, str(final), found.mime, name, sniffer.size)


ATTACH_USAGE = (
    "/attach PATH — the file goes with your next message (or drop the file into the prompt); "
    "/detach drops what waits"
)


def named_path(argument: str) -> Path:
    """The path `/attach` names: quoted or escaped as a shell would, `~` expanded."""
    split = words(argument)
    raw = split[0].text if split is not None and len(split) == 1 else argument.strip()
    if raw.startswith("file://"):
        raw = str(local_path(raw) or raw)
    return Path(os.path.expanduser(raw))


def described(att: Attachment) -> str:
    return f"{att.name} ({size_words(att.size)})"


async def local_command(attacher: Attacher, text: str) -> str | None:
    """The reply to a row of `local.LOCAL` answered here (`/attach …`, `/detach`);
    None for any other line."""
    head, _, argument = text.strip().partition(" ")
    answer = ANSWERS.get(head.lower().removeprefix("/")) if head.startswith("/") else None
    return None if answer is None else await answer(attacher, argument)


async def _detach(attacher: Attacher, argument: str) -> str:
    count = attacher.drop()
    return f"📎 {count} file{'s' * (count != 1)} dropped" if count else "📎 no file waits"


async def _attach(attacher: Attacher, argument: str) -> str:
    if not argument.strip():
        if not attacher.pending:
            return ATTACH_USAGE
        return "📎 waiting for your next message: " + ", ".join(map(described, attacher.pending))
    try:
        att = await asyncio.to_thread(attacher.add, named_path(argument))
    except AttachError as exc:
        return str(exc)
    return f"📎 {described(att)} goes with your next message"


# the rows of `local.LOCAL` answered here (its quit row ends the chat loop instead)
ANSWERS: dict[str, Callable[[Attacher, str], Awaitable[str]]] = {
    "attach": _attach,
    "detach": _detach,
}


async def attach_dropped(attacher: Attacher, line: str) -> tuple[str, list[str]]:
    """(the message text, a line per file) for a line with files dropped into it."""
    text, paths = dropped(line)
    notes = []
    for path in paths:
        try:
            notes.append(f"📎 {described(await asyncio.to_thread(attacher.add, path))}")
        except AttachError as exc:
            notes.append(str(exc))
    return text, notes

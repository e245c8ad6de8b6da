"""The web page's bearer token: configured, or kept in `$ROOST_HOME/web-token` (mode 0600).

A token made by this start is stored only once the page listens (`store_web_token`):
a first start that fails (its port taken) keeps nothing, so the start that succeeds
is the one that makes the token and prints its `#token=` link, once (to a terminal
only: `bridge.app.channels_up.web_start_line`). A stored file that others may read
(copied in with `cp`, made by hand) is tightened to 0600 at start, with one WARNING.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from bridge.app.logging_setup import redact_also
from bridge.core.config import Settings

log = logging.getLogger(__name__)


def web_token(settings: Settings) -> tuple[str, bool]:
    """The token and whether it is new: configured, stored, or generated now (not yet
    stored: `store_web_token` keeps it once the page is up). The log's Redactor knows
    the configured one from the start; a stored or generated one is taught to it here."""
    if settings.web.token is not None:
        return settings.web.token.get_secret_value(), False
    path = settings.home / "web-token"
    if path.is_file():
        tighten_token_file(path)
        token, new = path.read_text().strip(), False
    else:
        token, new = secrets.token_urlsafe(24), True
    redact_also(token)  # no log line may show it, as a configured web.token
    return token, new


def store_web_token(path: Path, token: str) -> None:
    """Keep a new token (mode 0600, never replacing a file that is there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def tighten_token_file(path: Path) -> None:
    """Make the stored token owner-only (0600), saying so once when it was looser; a
    file roost may not chmod (another user's) is named with the command that fixes it."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if not mode & 0o077:
        return
    try:
        path.chmod(0o600)
    except OSError as exc:
        log.warning(
            "%s is readable by others (mode %04o) and cannot be changed (%s): anyone who "
            "reads it can use the web page; run `chmod 600 %s` as its owner",
            path,
            mode,
            exc.strerror,
            path,
        )
        return
    log.warning(
        "%s was readable by others (mode %04o); changed to 0600 (it holds the web page's "
        "access token)",
        path,
        mode,
    )

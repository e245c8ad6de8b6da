"""The web page's bearer token: configured, or kept in `$ROOST_HOME/web-token` (mode 0600).

A token made by this start is stored only once the page listens (`store_web_token`):
a first start that fails (its port taken) keeps nothing, so the start that succeeds
is the one that makes the token and prints its `#token=` link, once.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from bridge.core.config import Settings


def web_token(settings: Settings) -> tuple[str, bool]:
    """The token and whether it is new: configured, stored, or generated now (not yet
    stored: `store_web_token` keeps it once the page is up)."""
    if settings.web.token is not None:
        return settings.web.token.get_secret_value(), False
    path = settings.home / "web-token"
    if path.is_file():
        return path.read_text().strip(), False
    return secrets.token_urlsafe(24), True


def store_web_token(path: Path, token: str) -> None:
    """Keep a new token (mode 0600, never replacing a file that is there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
        fh.flush()
        os.fsync(fh.fileno())

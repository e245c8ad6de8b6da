"""Load the optional HMAC key of the audit chain.

The key lives outside the audit directory: a file named in the
configuration, else the systemd credential `$CREDENTIALS_DIRECTORY/audit-hmac-key`.
No key means an unkeyed chain (hash-linked, but a wholesale rewrite passes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CREDENTIAL_NAME = "audit-hmac-key"
MIN_KEY_BYTES = 16


class HmacKeyError(ValueError):
    """The configured key cannot be used."""


def load_hmac_key(
    key_path: Path | None, audit_dir: Path, env: Mapping[str, str] | None = None
) -> bytes | None:
    """Return the key bytes (surrounding whitespace stripped), or None when none is set."""
    environ = os.environ if env is None else env
    path = key_path
    if path is None and environ.get("CREDENTIALS_DIRECTORY"):
        candidate = Path(environ["CREDENTIALS_DIRECTORY"]) / CREDENTIAL_NAME
        path = candidate if candidate.exists() else None
    if path is None:
        return None
    resolved, audit = path.resolve(), audit_dir.resolve()
    if resolved == audit or audit in resolved.parents:
        raise HmacKeyError(f"the audit HMAC key must live outside {audit}")
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise HmacKeyError(f"cannot read the audit HMAC key {path}: {exc.strerror}") from exc
    if len(key) < MIN_KEY_BYTES:
        raise HmacKeyError(f"the audit HMAC key {path} is shorter than {MIN_KEY_BYTES} bytes")
    return key

"""Load the optional HMAC key of the audit chain, and the names key.

The names key (`<audit dir>/names.key`, 32 random bytes, mode 0600, made on
first open) keys the ids that stand for names people or models chose.

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


NAMES_KEY = "names.key"
NAMES_KEY_BYTES = 32


def load_names_key(audit_dir: Path) -> bytes:
    """Read `<audit_dir>/names.key`, creating it (0600, random) when missing.

    Created whole or not at all (a temp file linked into place), so a crash
    never leaves an empty key; call under the chain lock.
    """
    path = audit_dir / NAMES_KEY
    if not path.exists():
        tmp = audit_dir / f".{NAMES_KEY}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, os.urandom(NAMES_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    key = path.read_bytes()
    if len(key) < MIN_KEY_BYTES:
        raise HmacKeyError(f"the audit names key {path} is shorter than {MIN_KEY_BYTES} bytes")
    return key

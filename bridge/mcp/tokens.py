"""The per-tenant bearer token of `roost mcp --http`: made, shown, rotated, checked.

Each tenant has its own token in `$ROOST_HOME/mcp/<tenant>.token` (mode 0600,
directory 0700), made on first use and replaced by `--rotate`. The HTTP server
reads the file on every request, so a rotation locks the old token out at once,
without a restart. A token names its tenant only by where it is stored: one
tenant's token never matches another tenant's file.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from bridge.core.atomic import write_text
from bridge.types.tenant_dirs import check_tenant_id

PREFIX = "roost-mcp-"


def token_path(home: Path, tenant: str) -> Path:
    return home / "mcp" / f"{check_tenant_id(tenant)}.token"


def read_token(home: Path, tenant: str) -> str | None:
    """The tenant's token, or None when there is none yet (or it cannot be read)."""
    try:
        text = token_path(home, tenant).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def new_token(home: Path, tenant: str) -> str:
    """Make (or replace) the tenant's token; the old one stops working at once."""
    path = token_path(home, tenant)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = PREFIX + secrets.token_urlsafe(32)
    write_text(path, token + "\n", 0o600)
    return token


def ensure_token(home: Path, tenant: str) -> str:
    """The tenant's token, made on first use."""
    return read_token(home, tenant) or new_token(home, tenant)


def bearer_ok(header: str | None, expected: str | None) -> bool:
    """Whether an `Authorization` header carries exactly `expected` (constant time)."""
    if not header or not expected:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), expected.encode())

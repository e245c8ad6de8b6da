"""The markers of unfinished `roost forget` runs, and the check that bars their tenants.

`$ROOST_HOME/forgetting/<tid>.json` stands while a tenant is being forgotten
(`bridge.app.forgetting` writes and removes it). The daemon's access check
asks `forgetting()` on every message and `roost doctor` lists `pending()`;
a module of its own so that they need not import the export and deletion code.
"""

from __future__ import annotations

from pathlib import Path

from bridge.types.tenant_dirs import check_tenant_id

FOLDER = "forgetting"


def marker_path(home: Path, tenant: str) -> Path:
    return home / FOLDER / f"{check_tenant_id(tenant)}.json"


def forgetting(home: Path, tenant: str) -> bool:
    """Whether an unfinished `roost forget` bars `tenant` (one stat)."""
    try:
        return marker_path(home, tenant).exists()
    except ValueError:
        return False


def pending(home: Path) -> list[str]:
    """Tenants whose forgetting was started and not finished."""
    folder = home / FOLDER
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json"))

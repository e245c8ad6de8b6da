"""Block 8's source: a tenant's live and shadow bullets (the loadout's StyleView).

The snapshot shows a shadow bullet on the turns where its own cohort bit
(`bridge.prompt.views.shadow_cohort(msg_id, bullet_id)`) is 1. The tenant is
the directory above `global/` of the tenant root, as everywhere in the loadout.
"""

from __future__ import annotations

from pathlib import Path

from bridge.prompt.views import BulletRow
from bridge.style.store import StyleStore


class LearnedStyle:
    """Implements `StyleView` from the learner's SQLite table."""

    def __init__(self, store: StyleStore) -> None:
        self._store = store

    def bullets(self, tenant_root: Path) -> list[BulletRow]:
        """Live and shadow bullets; the snapshot shows each shadow on its own cohort."""
        return self._rows(tenant_root)

    def _rows(self, tenant_root: Path) -> list[BulletRow]:
        if tenant_root.name != "global":
            return []  # not a tenant root: show nothing rather than guess a tenant
        tenant = tenant_root.parent.name
        return [(b.bid, b.text, b.state) for b in self._store.tenant(tenant, ("live", "shadow"))]

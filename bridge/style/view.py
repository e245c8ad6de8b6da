"""Block 8's source: a tenant's live and shadow bullets (the loadout's StyleView).

The snapshot shows a shadow bullet on the turns where its own cohort bit
(`bridge.prompt.views.shadow_cohort(msg_id, bullet_id)`) is 1. The tenant is
the one the `TenantDirs` name.
"""

from __future__ import annotations

from bridge.prompt.views import BulletRow
from bridge.style.store import StyleStore
from bridge.types.tenant_dirs import TenantDirs


class LearnedStyle:
    """Implements `StyleView` from the learner's table (its store's mirror)."""

    tables = ("style_bullets",)  # what it reads (`bridge.prompt.views.declared`); no files
    files = None

    def __init__(self, store: StyleStore) -> None:
        self._store = store

    def bullets(self, dirs: TenantDirs) -> list[BulletRow]:
        """Live and shadow bullets; the snapshot shows each shadow on its own cohort. Read
        from the store's mirror (the prompt awaits `TableChanges.prepare` first; not read
        yet: none, and the memo's token is None, so it is asked again next turn)."""
        rows = self._store.cached(dirs.tenant) or ()
        return [BulletRow(b.bid, b.text, b.state) for b in rows]

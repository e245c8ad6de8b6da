"""Prompt block 9's source: the tenant's `me.*` tools with last use."""

from __future__ import annotations

from bridge.personal_tools.catalog import ToolCatalog
from bridge.prompt.views import ToolRow
from bridge.types.tenant_dirs import TenantDirs


class SavedToolsView:
    """Implements the loadout's `PersonalToolsView` from the forge library.

    Declares its inputs (`bridge.prompt.views.declared`): no database table of
    roost.db, and files through the catalog's cache (the usage database included,
    as a dependency on the tools directory)."""

    tables: tuple[str, ...] = ()

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog
        self.files = catalog.files

    def tools(self, dirs: TenantDirs) -> list[ToolRow]:
        entries = self._catalog.entries(dirs.tools)
        if not entries:
            return []
        usage = self._catalog.usage(dirs.tools)
        rows: list[ToolRow] = []
        for e in entries:
            last = usage[e.name].last_used_ms if e.name in usage else None
            rows.append(
                ToolRow(e.name, e.description, last / 1000 if last else None, e.created_ms / 1000)
            )
        return rows

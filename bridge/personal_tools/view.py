"""Prompt block 9's source: the tenant's `me.*` tools with last use."""

from __future__ import annotations

from pathlib import Path

from bridge.personal_tools.catalog import ToolCatalog
from bridge.prompt.views import ToolRow


class SavedToolsView:
    """Implements the loadout's `PersonalToolsView` from the forge library."""

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog

    def tools(self, tenant_root: Path) -> list[ToolRow]:
        # The protocol still passes the tenant root; when it passes `TenantDirs`
        # (bridge/prompt/views.py, another part of issue 10) this is `dirs.tools`.
        tools_dir = tenant_root / "forge" / "tools"
        entries = self._catalog.entries(tools_dir)
        if not entries:
            return []
        usage = self._catalog.usage(tools_dir)
        rows: list[ToolRow] = []
        for e in entries:
            last = usage[e.name].last_used_ms if e.name in usage else None
            rows.append((e.name, e.description, last / 1000 if last else None, e.created_ms / 1000))
        return rows

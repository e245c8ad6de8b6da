"""Where one tenant's files live: every path derived from its root, never from user text.

`TenantDirs` is passed (not a bare path) to everything that touches a
tenant's files; the tree is created with mode 0700. Tenant ids match
`TENANT_ID`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

TENANT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


def check_tenant_id(value: str) -> str:
    if not TENANT_ID.fullmatch(value):
        raise ValueError(
            f"tenant id {value!r} must match {TENANT_ID.pattern} "
            "(lowercase letters, digits, '_' or '-', at most 32)"
        )
    return value


@dataclass(frozen=True, slots=True)
class TenantDirs:
    """The fixed layout of one tenant's files, each path built once (a turn reads them often)."""

    tenant: str
    root: Path  # tenants/<tid>/global
    user_md: Path = field(init=False, repr=False, compare=False)
    steering: Path = field(init=False, repr=False, compare=False)
    memory: Path = field(init=False, repr=False, compare=False)
    skills: Path = field(init=False, repr=False, compare=False)
    tools: Path = field(init=False, repr=False, compare=False)  # forge/tools
    vault: Path = field(init=False, repr=False, compare=False)
    workspace: Path = field(init=False, repr=False, compare=False)
    out: Path = field(init=False, repr=False, compare=False)  # tenants/<tid>/out: files handed out
    inbox: Path = field(init=False, repr=False, compare=False)  # workspace/inbox: attachments in
    outputs: Path = field(init=False, repr=False, compare=False)  # workspace/outputs: tools' files
    web_commands: Path = field(init=False, repr=False, compare=False)  # the page's commands
    _leaves: tuple[str, ...] = field(init=False, repr=False, compare=False)  # ensure()'s checks

    def __post_init__(self) -> None:
        root = self.root
        for name, path in (
            ("user_md", root / "USER.md"),
            ("steering", root / "STEERING.md"),
            ("memory", root / "memory"),
            ("skills", root / "skills"),
            ("tools", root / "forge" / "tools"),
            ("vault", root / "vault"),
            ("workspace", root / "workspace"),
            ("out", root.parent / "out"),  # beside global/: never inside an export
            ("inbox", root / "workspace" / "inbox"),  # a saved tool can read what was sent
            ("outputs", root / "workspace" / "outputs"),  # what a tool writes here is handed back
            ("web_commands", root.parent / "web" / "commands"),  # beside global/: no tool reads it
        ):
            object.__setattr__(self, name, path)
        leaves = (self.memory, self.skills, self.tools, self.vault, self.outputs)
        object.__setattr__(self, "_leaves", tuple(map(str, leaves)))

    @property
    def leaves(self) -> tuple[str, ...]:
        """The folders `ensure` checks (each one's parents exist with it)."""
        return self._leaves

    @classmethod
    def of(cls, home: Path, tenant: str) -> TenantDirs:
        check_tenant_id(tenant)
        return cls(tenant, home / "tenants" / tenant / "global")

    def ensure(self) -> TenantDirs:
        """Create the tree (mode 0700) if missing; cheap when it exists (a stat per folder:
        an upload or a memory write may have made part of it, e.g. only workspace/inbox).
        `workspace/outputs` is made too, so a tool's `open("outputs/report.txt", "w")` works
        from the first call (made again by the next turn if a tool removed it)."""
        tree = (
            self.root,
            self.memory,
            self.skills,
            self.tools,
            self.vault,
            self.workspace,
            self.outputs,
        )
        if all(map(os.path.isdir, self._leaves)):  # each leaf's parents exist with it
            return self
        for path in tree:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(path, 0o700)
        for parent in (self.root.parent, self.root.parent.parent):
            os.chmod(parent, 0o700)
        return self

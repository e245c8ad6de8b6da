"""Which of a tool's declared secrets are not in the tenant's vault yet, and how to add them.

The vault keeps one file per secret under `TenantDirs.vault`, named as last
spelled; names compare case-insensitively (`forge.schema.secret_key`). This
reads only the names, never a value (`bridge.loadout.vault` owns the vault;
a sibling capability may not import it). A declared secret that is not stored
makes every `secret(NAME)` of the tool fail, and nothing in a chat can store it:
the operator runs `roost vault set TENANT NAME` (README, the vault row).
"""

from __future__ import annotations

import os

from bridge.types.tenant_dirs import TenantDirs
from forge.schema import SECRET_NAME_RE, secret_key


def stored_keys(dirs: TenantDirs) -> frozenset[str]:
    """The comparison keys of the secrets stored in the tenant's vault."""
    try:
        listing = os.listdir(dirs.vault)
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    return frozenset(secret_key(n) for n in listing if SECRET_NAME_RE.fullmatch(n))


def missing(declared: tuple[str, ...], stored: frozenset[str]) -> tuple[str, ...]:
    """The declared secrets (as spelled in SECRETS) that are not stored."""
    return tuple(n for n in declared if secret_key(n) not in stored)


def how_to_add(tenant: str, name: str) -> str:
    return f"roost vault set {tenant} {name}"


def missing_note(names: tuple[str, ...], tenant: str) -> list[str]:
    """The consent's lines for declared secrets not in the vault ([] when none)."""
    if not names:
        return []
    commands = "; ".join(f"`{how_to_add(tenant, n)}`" for n in names)
    return [
        f"⚠️ Not in your vault yet: {', '.join(names)}. The tool fails where it reads "
        f"{'it' if len(names) == 1 else 'them'} until the operator stores "
        f"{'it' if len(names) == 1 else 'them'} (a chat cannot): {commands} "
        "(the value is read from stdin)."
    ]


def runtime_message(name: str, tenant: str) -> str:
    """What a call that read a declared but unstored secret failed on."""
    return (
        f"secret {name!r} is declared in SECRETS but not stored in the vault yet: "
        f"the operator adds it with `{how_to_add(tenant, name)}` (the value on stdin)"
    )

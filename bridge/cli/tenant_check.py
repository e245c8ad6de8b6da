"""Whether a tenant named on a command line is one: configured, or with files in the home.

`roost export --tenant T` and `roost vault ... T` once took any well-formed
name: a typo exported an empty ZIP, or stored a secret for a tenant nobody
is (making its folders). `unknown_tenant` says why a name is refused, or
None: a configured tenant (`[tenants.X]` or the local one) always passes;
one with files in the home passes where its files are what the command
reads (an export after the tenant left the config, listing or removing its
secrets), not where the command would make it (storing a secret, pairing).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection

from bridge.core.config import Settings, config_path
from bridge.core.tenants import configured_tenants


def unknown_tenant(
    settings: Settings,
    tenant: str,
    command: str,
    *,
    files_do: bool,
    hint: str = "",
    advice: str | None = None,
) -> str | None:
    """The refusal of `tenant` for `roost COMMAND`, or None when it may go on. `files_do`: a
    tenant that is not configured but has a folder in the home is taken too; `hint` ends
    the advice (`roost pair`'s); `advice` replaces it (a command that deletes must not
    suggest creating the tenant it names). The advice names the config file this process
    reads (`$ROOST_CONFIG`, else ~/.config/roost/roost.toml) and a typo first: "the config
    file" left a newcomer to guess which one, and a misspelt name is the likelier cause."""
    known = configured_tenants(settings.tenants, settings.local_tenant)
    if tenant in known:
        return None
    if files_do and (settings.home / "tenants" / tenant).is_dir():
        return None
    where = " nor with files in the home" if files_do else ""
    if advice is None:
        path, _ = config_path(os.environ)
        advice = f"Check the spelling, or add [tenants.{tenant}] to {path} first{hint}."
    return (
        f"roost {command}: there is no tenant {tenant!r} in the configuration{where} (known: "
        f"{', '.join(sorted(known))}). {advice}"
    )


def refused(
    settings: Settings,
    tenant: str | None,
    command: str,
    held: Collection[str] = (),
    advice: str | None = None,
) -> bool:
    """True, after saying why on stderr (the caller exits 2), when `--tenant` names no
    tenant `roost COMMAND` can read: not configured, no files in the home, and not among
    `held` (the tenants with rows in what the command reads). Commands that read only
    (`recall`, `jobs`, `style list-live`, `forget`) once answered a typo as an empty
    tenant ("no jobs", "no live bullets"). None (no `--tenant`) passes. `advice`: as
    `unknown_tenant`'s."""
    if tenant is None or tenant in held:
        return False
    refusal = unknown_tenant(settings, tenant, command, files_do=True, advice=advice)
    if refusal is None:
        return False
    print(refusal, file=sys.stderr)
    return True


def known(settings: Settings, tenant: str | None) -> bool:
    """Configured, or with files in the home (no need to look at a command's rows)."""
    return tenant is None or unknown_tenant(settings, tenant, "", files_do=True) is None

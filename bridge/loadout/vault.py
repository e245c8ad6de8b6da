"""The vault: a tenant's secret values, one file per name under `vault/`, mode 0600.

The prompt sees names only; values leave the vault through `reveal` (which
audits `secret.used` with the name) and `values` (for masking replies). A
value is never logged, audited or echoed. Names are `[A-Za-z][A-Za-z0-9_]*`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from bridge.audit_sink import AuditSink
from bridge.loadout.atomic import remove, write_text
from bridge.loadout.filecache import FileCache, sig
from bridge.loadout.mask import MIN_SECRET_CHARS, Masker

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
MAX_VALUE = 16_384


class VaultError(ValueError):
    pass


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise VaultError(
            f"vault name {name!r} must start with a letter and use letters, digits and '_' "
            "(at most 64), e.g. GITHUB_TOKEN"
        )
    return name


def vault_dir(root: Path) -> Path:
    return root / "vault"


def names(root: Path, cache: FileCache | None = None) -> tuple[str, ...]:
    listing = cache.listdir(vault_dir(root)) if cache else _listdir(vault_dir(root))
    return tuple(n for n in listing if NAME.fullmatch(n))


def _listdir(path: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except FileNotFoundError:
        return ()


def set_value(root: Path, name: str, value: str) -> None:
    check_name(name)
    if len(value) < MIN_SECRET_CHARS:
        raise VaultError(f"a vault value needs at least {MIN_SECRET_CHARS} characters")
    if len(value) > MAX_VALUE:
        raise VaultError(f"a vault value holds at most {MAX_VALUE:,} characters")
    d = vault_dir(root)
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    write_text(d / name, value, mode=0o600)


def remove_value(root: Path, name: str) -> bool:
    check_name(name)
    return remove(vault_dir(root) / name)


class Vault:
    """Values of every tenant, read through a stat-checked cache."""

    def __init__(self, audit: AuditSink, cache: FileCache | None = None) -> None:
        self._audit = audit
        self._cache = cache or FileCache()
        self._maskers: dict[str, tuple[object, Masker]] = {}

    def values(self, root: Path) -> Mapping[str, str]:
        out = {}
        for name in names(root, self._cache):
            value = self._cache.read(vault_dir(root) / name)
            if value is not None and len(value) >= MIN_SECRET_CHARS:
                out[name] = value
        return out

    def masker(self, root: Path) -> Masker:
        """The masker for this tenant's current values; rebuilt only when the vault changed."""
        d = vault_dir(root)
        key = (sig(d), tuple((n, sig(d / n)) for n in names(root, self._cache)))
        hit = self._maskers.get(str(root))
        if hit is not None and hit[0] == key:
            return hit[1]
        masker = Masker(self.values(root))
        self._maskers[str(root)] = (key, masker)
        return masker

    async def reveal(
        self, tenant: str, root: Path, wanted: list[str], purpose: str
    ) -> dict[str, str]:
        """Values for a tool that declared them; audits `secret.used` per name found."""
        values = self.values(root)
        out = {n: values[n] for n in wanted if n in values}
        for name in out:
            await self._audit.emit("secret.used", tenant, {"name": name, "purpose": purpose})
        return out

"""The vault: a tenant's secret values, one file per name under `vault/`, mode 0600.

The prompt sees names only; values leave the vault through `reveal` (which
audits `secret.used` with the name) and `values` (for masking: `masker(dirs)`
is the tenant's one masking point, `masker_of(dirs)` the same for a process
that runs no daemon, such as `roost send --to`). A value is
never logged, audited or echoed. Names follow the forge's one rule for secret
names (`forge.schema.SECRET_NAME_RE`, also a tool's `SECRETS`): case-insensitive,
kept as last spelled, so `GITHUB_TOKEN` and a tool's `github_token` are one
secret and two spellings never sit side by side (nor clash on a
case-insensitive file system).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bridge.core.atomic import remove, write_text
from bridge.core.filecache import FileCache, Reads
from bridge.loadout.mask import MIN_SECRET_CHARS, Masker
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs
from forge.schema import SECRET_NAME_RE, secret_key

NAME = SECRET_NAME_RE
MAX_VALUE = 16_384
_MAX_MASKERS = 4096  # tenants whose masker is kept


class VaultError(ValueError):
    pass


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise VaultError(
            f"vault name {name!r} must start with a letter and use letters, digits and '_' "
            "(at most 64), e.g. GITHUB_TOKEN"
        )
    return name


def _files(dirs: TenantDirs, cache: FileCache | None = None) -> dict[str, str]:
    """Comparison key -> file name (the first in sort order if a spelling is doubled)."""
    listing = cache.listdir(dirs.vault) if cache else _listdir(dirs.vault)
    out: dict[str, str] = {}
    for n in sorted(listing):
        if NAME.fullmatch(n):
            out.setdefault(secret_key(n), n)
    return out


def names(dirs: TenantDirs, cache: FileCache | None = None) -> tuple[str, ...]:
    return tuple(sorted(_files(dirs, cache).values()))


def _listdir(path: Path) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except FileNotFoundError:
        return ()


def read_values(dirs: TenantDirs, cache: FileCache | None = None) -> dict[str, str]:
    """Every value of the tenant's vault long enough to mask, by name."""
    out = {}
    for name in _files(dirs, cache).values():
        if cache is not None:
            value = cache.read(dirs.vault / name)
        else:
            try:
                value = (dirs.vault / name).read_text("utf-8")
            except (FileNotFoundError, UnicodeDecodeError):
                value = None
        if value is not None and len(value) >= MIN_SECRET_CHARS:
            out[name] = value
    return out


def masker_of(dirs: TenantDirs) -> Masker:
    """The tenant's masker, read now (a short-lived process; the daemon caches it)."""
    return Masker(read_values(dirs))


def set_value(dirs: TenantDirs, name: str, value: str) -> None:
    check_name(name)
    if len(value) < MIN_SECRET_CHARS:
        raise VaultError(f"a vault value needs at least {MIN_SECRET_CHARS} characters")
    if len(value) > MAX_VALUE:
        raise VaultError(f"a vault value holds at most {MAX_VALUE:,} characters")
    d = dirs.vault
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    write_text(d / name, value, mode=0o600)
    for other in _listdir(d):
        if other != name and NAME.fullmatch(other) and secret_key(other) == secret_key(name):
            remove(d / other)


def remove_value(dirs: TenantDirs, name: str) -> bool:
    check_name(name)
    d = dirs.vault
    found = [n for n in _listdir(d) if NAME.fullmatch(n) and secret_key(n) == secret_key(name)]
    return any([remove(d / n) for n in found])


class Vault:
    """Values of every tenant, read through a stat-checked cache."""

    def __init__(self, audit: AuditSink, cache: FileCache | None = None) -> None:
        self._audit = audit
        self._cache = cache or FileCache()
        # tenant root -> (what the values were read from, the values, their masker)
        self._maskers: dict[str, tuple[Reads, dict[str, str], Masker]] = {}

    def values(self, dirs: TenantDirs) -> Mapping[str, str]:
        return read_values(dirs, self._cache)

    def masker(self, dirs: TenantDirs) -> Masker:
        """The masker for this tenant's current values, kept while the vault's listing
        and every file it read are unchanged (`FileCache.still`): with the cache's watch
        one look at the inotify queue per call (a turn asks three times). Answers no
        generation vouches for (a link, a hard-linked file, a vault first read before
        its directory could be watched, no watch at all) are read again through the
        cache each call, as before, and the masker is rebuilt only when the values
        differ. A kept answer is not added to a `FileCache.recording` open around the
        call (no memo built from files calls this: the prompt reads the names itself)."""
        root = str(dirs.root)
        hit = self._maskers.get(root)
        if hit is not None and not hit[0].loose and self._cache.still(hit[0]):
            return hit[2]
        with self._cache.recording() as reads:
            values = read_values(dirs, self._cache)
        masker = hit[2] if hit is not None and hit[1] == values else Masker(values)
        if len(self._maskers) >= _MAX_MASKERS:
            self._maskers.clear()
        self._maskers[root] = (reads, values, masker)
        return masker

    async def reveal(self, dirs: TenantDirs, wanted: list[str], purpose: str) -> dict[str, str]:
        """Values for a tool that declared them, under the names it declared (matched
        case-insensitively); audits `secret.used` with the vault's name per name found."""
        by_key = {secret_key(n): (n, v) for n, v in self.values(dirs).items()}
        out: dict[str, str] = {}
        for want in wanted:
            hit = by_key.get(secret_key(want))
            if hit is not None and want not in out:
                out[want] = hit[1]
                await self._audit.emit(
                    "secret.used", dirs.tenant, {"name": hit[0], "purpose": purpose}
                )
        return out

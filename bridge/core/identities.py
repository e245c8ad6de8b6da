"""Configured identities, per platform: `[tenants.NAME] <platform>_ids = [...]`.

`identity_map(tenants, platforms)` reads every tenant's lists through the
platforms' declarations (`bridge.types.platform`: which key, how one entry
is written) and returns channel -> identity -> tenant for the resolver
(`bridge.core.tenants.identity_rule`). Anything it cannot use is a
`ConfigError` naming the key: a list for a platform the registry does not
know, an entry that is not one of the platform's identities, or one identity
listed under two tenants. `tenant_of(...)` is the same lookup for one
identity, for operator commands (`roost send --to`).
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.core.config import ConfigError
from bridge.core.config_sections import TenantRule
from bridge.types.platform import Platforms

IdentityMap = dict[str, dict[str, str]]


def identity_map(tenants: Mapping[str, TenantRule], platforms: Platforms) -> IdentityMap:
    """channel -> identity -> tenant for every configured identity (ConfigError if wrong)."""
    keyed = platforms.with_ids()
    out: IdentityMap = {p.name: {} for p in keyed.values()}
    for tid, rule in tenants.items():
        for key in sorted(rule.model_extra or {}):
            platform = keyed.get(key)
            if platform is None:
                known = ", ".join(sorted(keyed)) or "none"
                raise ConfigError(
                    f"invalid configuration: tenants.{tid}.{key}: no platform of that name "
                    f"(known: {known})"
                )
            seen = out[platform.name]
            for value in rule.identities(key):
                identity = platform.parse_id(value)
                if identity is None:
                    raise ConfigError(
                        f"invalid configuration: tenants.{tid}.{key}: {value!r} is not a "
                        f"{platform.title} identity"
                    )
                if seen.get(identity, tid) != tid:
                    raise ConfigError(
                        f"invalid configuration: {platform.name} id {identity} is mapped to "
                        f"{seen[identity]!r} and {tid!r}"
                    )
                seen[identity] = tid
    return out


def tenant_of(
    tenants: Mapping[str, TenantRule], platforms: Platforms, channel: str, identity: str
) -> str | None:
    """The tenant whose `<platform>_ids` lists `identity` on `channel`, or None."""
    return identity_map(tenants, platforms).get(channel, {}).get(identity)


def listed(tenants: Mapping[str, TenantRule], platforms: Platforms) -> list[tuple[str, str, str]]:
    """(tenant, channel, identity) of every configured identity, in config order."""
    keyed = platforms.with_ids()
    out = []
    for tid, rule in tenants.items():
        for key in rule.model_extra or {}:
            platform = keyed.get(key)
            if platform is None:
                continue
            for value in rule.identities(key):
                identity = platform.parse_id(value)
                if identity is not None:
                    out.append((tid, platform.name, identity))
    return out

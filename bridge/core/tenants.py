"""Tenants: who a chat identity belongs to, and where that tenant's files live.

Every path of a tenant is derived from its root
(`$ROOST_HOME/tenants/<tid>/global`), never from user text; the tree is
created with mode 0700. `TenantResolver` maps an `Inbound` to a tenant id or
to None (unknown identity: refused, nothing else happens); `replace` swaps
its rules in one step (a config reload), so a message sees the old rules or
the new ones, never a mix. The tenants a
chat identity may resolve to through pairing are the configured ones
(`configured_tenants`: every `[tenants.X]` plus the local tenant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from bridge.types.messages import Inbound

LOOPBACK_CHANNELS = frozenset({"web", "cli"})


Rule = Callable[[Inbound], str | None]


def configured_tenants(tenants: Iterable[str], local_tenant: str) -> frozenset[str]:
    """The tenants a person may be paired to: `[tenants.X]` of the config plus the local one."""
    return frozenset((*tenants, local_tenant))


class TenantResolver:
    """Maps an inbound identity to a tenant through an ordered list of rules.

    `barred(tenant)` is true while the tenant must be served nothing (an
    unfinished `roost forget`, `bridge.app.forgetting`): `resolve` then
    answers None for it (jobs, files and voice notes go nowhere), and `Access`
    reads `match` to say why instead of refusing a stranger.
    """

    def __init__(
        self, rules: Sequence[Rule], barred: Callable[[str], bool] = lambda tenant: False
    ) -> None:
        self._rules = tuple(rules)
        self.barred = barred

    def replace(self, rules: Sequence[Rule]) -> None:
        """Use `rules` from the next `resolve` on (one assignment: atomic for the event loop)."""
        self._rules = tuple(rules)

    def resolve(self, inbound: Inbound) -> str | None:
        tenant = self.match(inbound)
        return None if tenant is not None and self.barred(tenant) else tenant

    def match(self, inbound: Inbound) -> str | None:
        """The tenant the rules name, barred or not."""
        rules = self._rules  # one snapshot per message, even if a reload replaces them
        for rule in rules:
            tenant = rule(inbound)
            if tenant is not None:
                return tenant
        return None


def loopback_rule(local_tenant: str, loopback: frozenset[str] = LOOPBACK_CHANNELS) -> Rule:
    """The loopback channels (their platforms say `loopback`: the web page with its
    own token, identity `local`, and the terminal) belong to the local tenant."""

    def rule(inbound: Inbound) -> str | None:
        if inbound.channel not in loopback or inbound.identity != "local":
            return None  # e.g. a tenant's own web token (`web_token_rule`)
        return local_tenant

    return rule


def web_token_rule(known: Callable[[str], bool]) -> Rule:
    """The web page signed in with a tenant's `web_token` (identity `tenant:<tid>`,
    set by the web channel after checking the token) belongs to that tenant while
    it is configured."""

    def rule(inbound: Inbound) -> str | None:
        if inbound.channel != "web" or not inbound.identity.startswith("tenant:"):
            return None
        tenant = inbound.identity.removeprefix("tenant:")
        return tenant if known(tenant) else None

    return rule


def identity_rule(ids: Mapping[str, Mapping[str, str]]) -> Rule:
    """Configured identities: channel -> identity -> tenant (`[tenants.X] <platform>_ids`,
    read through the platforms' declarations by `bridge.core.identities`)."""

    def rule(inbound: Inbound) -> str | None:
        return ids.get(inbound.channel, {}).get(inbound.identity)

    return rule

"""What a configuration reload changes in a running roost: one `OnReload` row per concern.

`reload_hooks(roost)` is the table `serve()` registers with the `Reloader`
(`bridge.app.reload`). Each row names the settings it applies live and a
callback taking the new `Settings`; whatever no row names is reported as
"applied only after a restart". A new live concern (named models, say) is
one more row here, or one `reloader.on_reload(live, apply)` call; a channel
offers its own rows in `Launched.live` (Telegram: `allowed_groups`).
"""

from __future__ import annotations

import asyncio
import functools
import logging

from bridge.app.build import Roost
from bridge.app.loadout import persona_dirs
from bridge.app.reload import OnReload
from bridge.app.wiring import access_rules, sense_limits
from bridge.core.budgets import budgets_of
from bridge.core.config import Settings
from bridge.core.pairing import unbind_removed
from bridge.core.router import CoreLimits
from bridge.core.tenants import configured_tenants
from bridge.core.turn import TurnSettings
from bridge.mcp.source import McpTools

log = logging.getLogger("roost")

# a tenant a reload removed loses its pairings for good after this long out of the
# configuration (a half-written roost.toml, fixed a moment later, must unpair nobody)
REMOVAL_GRACE_S = 600.0

MODELS = ("llm", "models", "style", "limits.daily_tokens", "limits.monthly_tokens")
LIMITS = ("limits.max_message_chars", "limits.max_reply_chars", "llm.max_steps")
SENSES = (
    "limits.attachment_bytes",
    "limits.image_max_side",
    "limits.document_chars",
    "limits.attachment_keep_hours",
    "limits.image_max_pixels",
    "limits.document_pages",
    "limits.decode_seconds",
)


def reload_hooks(
    roost: Roost, removal_grace_s: float = REMOVAL_GRACE_S, retry_s: float = REMOVAL_GRACE_S
) -> list[OnReload]:
    """The live settings of a roost and how each is applied (in this order).
    `removal_grace_s`: how long a tenant a reload removed stays out of the configuration
    before its pairings are removed for good; `retry_s`: how long after a removal that
    failed is tried again: its audit could not be written (nothing removed), for as long
    as the tenant stays out; its delete failed (the bindings audited are never audited
    again, by this removal or a later one of the tenant), until it is done. A removal under
    way (a try running, or a binding audited as revoked and not yet deleted) is not called
    off by a reload that configures the tenant again: it ends, so no binding is audited as
    revoked and kept, or half of them removed; the tenant comes back without them (its
    people /pair again)."""
    pending: dict[str, asyncio.Task[object]] = {}  # tenant -> its removal, until done
    removing: set[str] = set()  # tenants whose removal is under way: not called off
    # tenant -> its bindings (channel, identity, tenant, bound_at) audited as revoked and
    # not yet deleted (a delete that failed): its removal is under way until they go
    audited: dict[str, set[tuple[str, str, str, float]]] = {}

    def _unbound(tenant: str, task: asyncio.Task[object]) -> None:
        if pending.get(tenant) is task:
            del pending[tenant]
        if not task.cancelled() and task.exception() is not None:
            log.error("reload: removing pairings to removed tenants failed: %r", task.exception())

    local = roost.settings.local_tenant  # restart-only: the one in force stays configured
    served = set(configured_tenants(roost.settings.tenants, local))

    async def removal(tenant: str) -> None:
        await asyncio.sleep(removal_grace_s)
        while tenant not in served or audited.get(tenant):  # out for good, or under way
            removing.add(tenant)
            try:
                told = audited.setdefault(tenant, set())  # by an earlier try, not again
                gone = await unbind_removed(
                    roost.pairing, roost.audit, {tenant}, told, back=tenant in served
                )  # configured again: only what it audited goes, no pairing made since
                audited.pop(tenant, None)  # deleted: all it audited
                if gone and tenant in served:
                    log.warning(
                        "reload: tenant %s is configured again, but its pairings were being"
                        " removed (out of the configuration for %.0f s): its people /pair"
                        " again",
                        tenant,
                        removal_grace_s,
                    )
                return
            except Exception as exc:  # a full disk: tried again (while out, or under way)
                log.error(
                    "reload: removing the pairings of removed tenant %s failed (%r); trying"
                    " again in %.0f s",
                    tenant,
                    exc,
                    retry_s,
                )
            finally:
                if not audited.get(tenant):  # nothing audited and kept: may be called off
                    audited.pop(tenant, None)
                    removing.discard(tenant)
            await asyncio.sleep(retry_s)

    def access(new: Settings) -> None:  # tenants, their identities, who a pairing may bind
        if new.local_tenant != local:  # applied at the next restart, like the loopback's
            new = new.model_copy(update={"local_tenant": local})
        roost.resolver.replace(access_rules(new, roost.pairing, roost.platforms))
        # the resolver refuses the removed tenants' people from now on; their bindings
        # are removed for good once the tenant has stayed out for `removal_grace_s` (a
        # file saved half-way and fixed meanwhile unpairs nobody; a shutdown first: kept,
        # and the next start warns about them)
        known = configured_tenants(new.tenants, local)
        removed, back = served - known, known & set(pending)
        served.clear()
        served.update(known)
        for tenant in back - removing:  # configured again before its removal: nothing goes
            pending.pop(tenant).cancel()
        for tenant in sorted(removed - set(pending)):
            task = asyncio.get_running_loop().create_task(
                removal(tenant), name=f"unbind removed tenant {tenant}"
            )
            pending[tenant] = task
            task.add_done_callback(functools.partial(_unbound, tenant))

    def limits(new: Settings) -> None:  # from the next message on; running turns keep theirs
        roost.core.set_limits(
            CoreLimits(new.limits.max_message_chars),
            TurnSettings(new.llm.max_steps, new.limits.max_reply_chars),
        )

    def personas(new: Settings) -> None:  # persona files themselves are re-read when changed
        roost.loadout.personas.set_dirs(persona_dirs(new))

    def mcp(new: Settings) -> None:  # external MCP servers; a running turn keeps its sessions
        for source in roost.tool_sources:
            if isinstance(source, McpTools):
                source.reload({t: rule.mcp for t, rule in new.tenants.items()})

    def models(new: Settings) -> None:  # named models (a running turn keeps its backend), budgets
        roost.models.reload(new)
        roost.meter.set_budgets(budgets_of(new))

    def grading(new: Settings) -> None:  # the judge's model, cap and batch size
        roost.judge.configure(new.grading, new.llm.name)

    def voice(new: Settings) -> None:  # audio servers, transcription limits, speech settings
        if roost.voice.reload(new):
            heard, spoken = roost.voice.servers
            log.info(
                "reload: the voice's audio servers changed (transcription %s, speech %s)",
                "on" if heard is not None else "off",
                "on" if spoken is not None else "off",
            )

    def quota(new: Settings) -> None:  # disk space per tenant, from the next write on
        roost.quota.set_limit(new.quota.tenant_bytes)

    def senses(new: Settings) -> None:  # attachments: sizes, cut, keep time
        roost.senses.set_limits(sense_limits(new))

    return [
        OnReload.of(("tenants",), access),
        OnReload.of(SENSES, senses),
        OnReload.of(("quota",), quota),
        OnReload.of(("tenants",), mcp),
        OnReload.of(("grading", "llm.name"), grading),
        OnReload.of(MODELS, models),
        OnReload.of((), voice),
        OnReload.of(LIMITS, limits),
        OnReload.of(("loadout.personas_dir",), personas),
    ]

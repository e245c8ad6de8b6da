"""`roost style status|list-live|sweep`: the learner's operator commands, a table of verbs.

`sweep` builds the model backend and opens the audit chain exactly as the
daemon does (`bridge.app.models.make_backend`, `bridge.app.home.open_chain`);
the judge runs on `[style] judge_model` (default: the default model) and its
calls count against each tenant's token budget. With the offline backend the
judge reports "no model configured" and candidates stay pending.

`status` says whether roost-style.timer will run the next sweep: its unit file where
`roost install-units` puts it, and `systemctl is-active` when systemctl is here (a
machine without it, or without systemd, only loses that word). A sweep looks only at
tenants with a graded skill turn in its window or with bullets: the report names the
configured tenants it passed over, and why.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Collection
from datetime import UTC, datetime
from pathlib import Path

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.home import chain_paths, open_chain, prepare_home
from bridge.cli.rows import Run, Verb, add_verbs, no_args, pick, tenant_arg
from bridge.cli.tenant_check import known, refused
from bridge.cli.units import SYSTEMD_DIR
from bridge.core.budgets import UsageMeter, budgets_of
from bridge.core.config import Settings
from bridge.core.tenants import configured_tenants
from bridge.core.usage import UsageStore
from bridge.core.words import count
from bridge.style.judge import Judge
from bridge.style.rules import DAY_MS, Thresholds
from bridge.style.store import STATES, StyleStore
from bridge.style.sweep import Sweeper, SweepReport, read_window_ms

TIMER = "roost-style.timer"
SCHEDULE = "daily at 04:45"  # the timer's OnCalendar (systemd/roost-style.timer)
ASK_S = 5.0  # how long `systemctl is-active` may take


def timer_file() -> Path:
    """Where `roost install-units` tells the operator to put the timer."""
    return SYSTEMD_DIR / TIMER


def timer_activity(systemctl: str | None) -> str | None:
    """`systemctl is-active roost-style.timer`'s word (active, inactive, failed, ...), or
    None when there is no systemctl or it cannot tell (no systemd as init, a container)."""
    if systemctl is None:
        return None
    try:
        done = subprocess.run(
            [systemctl, "is-active", TIMER], capture_output=True, text=True, timeout=ASK_S
        )
    except (OSError, subprocess.SubprocessError):
        return None
    words = done.stdout.split()
    return words[0] if words else None


def next_sweep(installed: bool, activity: str | None) -> str:
    """`style status`'s line about the timer: whether it runs the next sweep at all."""
    where = timer_file()
    if activity == "active":
        return f"next sweep: {SCHEDULE} ({TIMER} is active, Persistent=true)"
    if installed and activity is None:
        return (
            f"next sweep: {SCHEDULE} ({TIMER} is installed in {where.parent}, "
            "Persistent=true; whether it is enabled could not be asked of systemctl)"
        )
    if installed:
        return (
            f"next sweep: {SCHEDULE} once {TIMER} runs: it is installed ({where}) but "
            f"{activity}: systemctl enable --now {TIMER}"
        )
    return (
        f"next sweep: {SCHEDULE} only with {TIMER}, which is not installed (no {where}): "
        "`roost install-units` prints it; until then `roost style sweep` runs one"
    )


def timer_line() -> str:
    """`next_sweep` for this machine: the unit file where install-units puts it, and
    systemctl's word when there is a systemctl (never a failure when there is none)."""
    return next_sweep(timer_file().is_file(), timer_activity(shutil.which("systemctl")))


def live_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", type=tenant_arg, help="only this tenant")


def sweep_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dry-run", action="store_true", help="show what would change; ask no model, write nothing"
    )


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _days(ms: int) -> int:
    return max(0, -(-ms // DAY_MS))


async def status(
    store: StyleStore, now_ms: int, t: Thresholds, out: Callable[[str], None], timer: str
) -> int:
    """The last sweep, the next one (`timer`: `timer_line`'s), then each tenant's bullets."""
    last = await store.last_sweep()
    if last is None:
        out("last sweep: never")
    else:
        out(
            f"last sweep: {_when(last.at_ms)}: {count(last.candidates, 'candidate')}, "
            f"{last.judged} judged, {last.promoted} promoted, {last.rejected} rejected, "
            f"{last.rolled_back} rolled back; judge: {last.judge_status}"
        )
    out(timer)
    tenants = await store.tenants()
    if not tenants:
        out("no bullets yet")
    for tenant in tenants:
        rows = await store.tenant(tenant)
        counts = {s: sum(1 for b in rows if b.state == s) for s in STATES}
        out(
            f"{tenant}: "
            + ", ".join(f"{counts[s]} {s}" for s in STATES)
            + f" (live cap {t.live_cap})"
        )
        for b in rows:
            if b.state == "pending":
                tries = count(b.judge_attempts, "attempt")
                out(f"  {b.bid} {b.skill}: awaiting the judge ({tries})")
            elif b.state == "shadow":
                left = (b.shadow_since_ms or 0) + t.shadow_days * DAY_MS - now_ms
                out(
                    f"  {b.bid} {b.skill}: shadow A/B, decided in {count(_days(left), 'day')}; "
                    f"with {b.with_counts.pct}% n={b.with_n}, "
                    f"without {b.without_counts.pct}% n={b.without_n}"
                )
        cooling: dict[str, int] = {}
        for b in rows:
            if b.cooldown_until_ms > now_ms:
                cooling[b.skill] = max(cooling.get(b.skill, 0), b.cooldown_until_ms)
        for skill, until in sorted(cooling.items()):
            out(f"  cooldown {skill}: until {_when(until)}")
    return 0


async def list_live(store: StyleStore, tenant: str | None, out: Callable[[str], None]) -> int:
    rows = await store.tenant(tenant, ("live",)) if tenant else await store.all(("live",))
    if not rows:
        out(f"{tenant}: no live bullets" if tenant else "no live bullets")
    for b in rows:
        out(
            f"{b.tenant}\t{b.bid}\t{b.skill}\tsince {_when(b.live_since_ms or 0)}\t"
            f"score {b.score}\t{b.text}"
        )
    return 0


def print_report(
    report: SweepReport, out: Callable[[str], None], configured: Collection[str] = ()
) -> None:
    """The sweep's counts; then the `configured` tenants it did not look at, and why."""
    head = "dry run: " if report.dry_run else ""
    out(
        f"{head}{count(len(report.tenants), 'tenant')}: "
        f"{count(report.candidates, 'candidate')}, "
        f"{report.judged} judged, {report.pending} pending, {report.promoted} promoted, "
        f"{report.rejected} rejected, {report.rolled_back} rolled back"
    )
    idle = sorted(set(configured) - set(report.tenants))
    if idle:
        days = read_window_ms(Thresholds()) // DAY_MS
        out(
            f"  not swept: {', '.join(idle)}: no skill turn graded in the last {days} days and "
            "no style bullets (the learner starts once a reply uses a skill and the next "
            "message grades it)"
        )
    if report.judge_status != "ok":
        out(f"judge: {report.judge_status}")
    for line in report.lines:
        out(f"  {line}")


async def run_sweep(settings: Settings, dry_run: bool, out: Callable[[str], None]) -> int:
    from bridge.app.models import make_backend
    from bridge.types.audit_sink import NullAudit

    prepare_home(settings.home)
    # style, usage and budgets: roost.db, or PostgreSQL with [database] url
    database = await open_database(settings.home / "roost.db", settings.database)
    model = settings.style.judge_model or settings.llm.name
    backend, _reason = make_backend(settings, model)
    meter = UsageMeter(UsageStore(database), budgets_of(settings))
    judge = Judge(backend, meter=meter, model=model)
    try:
        paths = chain_paths(settings.home)
        now_ms = int(time.time() * 1000)
        if dry_run:
            sweeper = Sweeper(StyleStore(database), judge, NullAudit())
            report = await sweeper.sweep_chain(paths, now_ms, dry_run=True)
        else:
            chain = await open_chain(settings, time.time, PLATFORMS)
            try:
                sweeper = Sweeper(StyleStore(database), judge, chain)
                report = await sweeper.sweep_chain(paths, now_ms)
            finally:
                await chain.aclose()
        print_report(report, out, configured_tenants(settings.tenants, settings.local_tenant))
        return 0
    finally:
        await backend.aclose()
        await database.aclose()


def run_sweep_verb(args: argparse.Namespace, settings: Settings) -> int:
    return asyncio.run(run_sweep(settings, args.dry_run, print))


def with_store(use: Callable[[argparse.Namespace, StyleStore], Awaitable[int]]) -> Run:
    """A verb that reads the style store of the home (created when missing): roost.db,
    or PostgreSQL with [database] url."""

    async def using(args: argparse.Namespace, settings: Settings) -> int:
        prepare_home(settings.home)
        database = await open_database(settings.home / "roost.db", settings.database)
        try:
            return await use(args, StyleStore(database))
        finally:
            await database.aclose()

    def run(args: argparse.Namespace, settings: Settings) -> int:
        return asyncio.run(using(args, settings))

    return run


async def run_status(args: argparse.Namespace, store: StyleStore) -> int:
    return await status(store, int(time.time() * 1000), Thresholds(), print, timer_line())


async def run_list_live(args: argparse.Namespace, store: StyleStore) -> int:
    return await list_live(store, args.tenant, print)


def run_list_live_verb(args: argparse.Namespace, settings: Settings) -> int:
    """`list-live`; a `--tenant` neither known nor with bullets exits 2 (a typo once
    answered "no live bullets")."""

    async def use(args: argparse.Namespace, store: StyleStore) -> int:
        if not known(settings, args.tenant) and refused(
            settings, args.tenant, "style list-live", await store.tenants()
        ):
            return 2
        return await run_list_live(args, store)

    return with_store(use)(args, settings)


VERBS: tuple[Verb[Run], ...] = (
    Verb(
        "status",
        "per tenant: bullets per state, A/B progress, cooldowns",
        no_args,
        with_store(run_status),
    ),
    Verb("list-live", "the live bullets (all tenants or one)", live_args, run_list_live_verb),
    Verb("sweep", "run the learner once over every tenant", sweep_args, run_sweep_verb),
)


def style_args(p: argparse.ArgumentParser) -> None:
    add_verbs(p, "style_command", VERBS)


def run_style(args: argparse.Namespace, settings: Settings) -> int:
    return pick(VERBS, args.style_command)(args, settings)

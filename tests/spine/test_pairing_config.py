"""A pairing lasts while its tenant is configured, and a wrong configuration unpairs nobody.

README: remove `[tenants.alice]` (a reload is enough) and the people paired to it are
strangers again. Session 38 removed the binding rows at each reload (good) and at each
start, in `build()` (ops38 M5): but every roost command builds a roost, so `roost send`
run once without the service's ROOST_CONFIG (sudo drops it) unpaired everyone, and a
pairing to the local tenant went at every start (atk39 #1, #2). Now a running daemon's
reload removes the bindings and unused codes of the tenants it removed, audited first
(atk39 #9), once the tenant has stayed out of the configuration for a grace (a
half-written file fixed meanwhile unpairs nobody: atk2 s39 #2); a start only warns about
bindings to tenants it does not know; a code whose tenant was removed pairs nobody
(atk39 #4).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.app.live import reload_hooks
from bridge.core.config import Settings, load_settings
from bridge.core.pairing import Binding
from bridge.types.audit_sink import Event, MemoryAudit
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

HIM = Inbound("telegram", "111", "111", "hello", "m1")


def configured(home: Path, *tenants: str) -> Settings:
    toml = "".join(f"[tenants.{t}]\ntelegram_ids = []\n" for t in tenants)
    (home.parent / "roost.toml").write_text(toml)
    return load_settings()


async def paired(roost: Roost, tenant: str = "alice") -> None:
    code = await roost.pairing.issue(tenant)
    assert (await roost.pairing.redeem("telegram", "111", code)).outcome == "bound"
    assert roost.resolver.match(HIM) == tenant


def revoked(audit: MemoryAudit) -> list[tuple[str | None, dict[str, object]]]:
    return [(tenant, d) for event, tenant, d in audit.events if event == "pairing.revoked"]


def reloaded(roost: Roost, settings: Settings, grace_s: float = 0.0) -> None:
    """A reload applied as serve's Reloader applies it (`grace_s`: how long a removed
    tenant stays out before its pairings go; 0: at once)."""
    for hook in reload_hooks_of(roost, grace_s):
        hook.apply(settings)


_HOOKS: dict[int, list] = {}  # one table per roost, as serve registers it once


def reload_hooks_of(roost: Roost, grace_s: float = 0.0) -> list:
    hooks = reload_hooks(roost, removal_grace_s=grace_s)
    return _HOOKS.setdefault(id(roost), [h for h in hooks if "tenants" in h.live])


async def unbinding_done() -> None:
    """Wait for the reload's background removals (`live.reload_hooks`), if any."""
    tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("unbind removed")]
    await asyncio.gather(*tasks, return_exceptions=True)


def delete_fails_once(roost: Roost) -> asyncio.Event:
    """The pairing store's first `revoke_bindings` fails (a disk error, after the audit);
    the event is set as it fails, the later calls delete as the store does."""
    revoke, failed = roost.pairing.revoke_bindings, asyncio.Event()

    async def failing_once(bindings: Collection[Binding]) -> list[Binding]:
        if not failed.is_set():
            failed.set()  # a retry waits from here
            raise OSError(5, "Input/output error")
        return await revoke(bindings)

    roost.pairing.revoke_bindings = failing_once  # type: ignore[method-assign]
    return failed


async def test_a_reload_without_the_tenant_removes_its_pairings_for_good(
    home: Path, clock: Clock
) -> None:
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        reload_hooks_of(roost)
        reloaded(roost, configured(home, "bob"))
        assert roost.resolver.match(HIM) is None  # at once
        await unbinding_done()
        assert await roost.pairing.bindings() == []
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
        reloaded(roost, configured(home, "alice", "bob"))  # the name again: pair again
        assert roost.resolver.match(HIM) is None
        assert await roost.pairing.bound_tenant("telegram", "111") is None
    finally:
        await roost.aclose()


async def test_a_command_run_with_another_configuration_unpairs_nobody(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    first = await build(configured(home, "alice"), backend=ScriptedBackend(), clock=clock)
    try:
        await paired(first)
    finally:
        await first.aclose()
    audit = MemoryAudit()
    with caplog.at_level(logging.WARNING):  # e.g. `roost send` without the service's config
        other = await build(
            configured(home, "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
        )
    try:
        assert other.resolver.match(HIM) is None  # ignored while alice is not configured
        assert [b.tenant for b in await other.pairing.bindings()] == ["alice"]
        assert revoked(audit) == []
    finally:
        await other.aclose()
    said = [r.getMessage() for r in caplog.records if r.name == "bridge.core.pairing"]
    assert said == [
        f"pairing: 1 binding to tenants {home.parent / 'roost.toml'} does not configure"
        " (alice) ignored; if that is the service's configuration and they were removed on"
        " purpose: roost access revoke alice"
    ]
    again = await build(configured(home, "alice"), backend=ScriptedBackend(), clock=clock)
    try:
        assert again.resolver.match(HIM) == "alice"  # the service's configuration: as before
    finally:
        await again.aclose()


async def test_a_pairing_to_the_local_tenant_survives_restarts_and_reloads(
    home: Path, clock: Clock
) -> None:
    first = await build(configured(home, "bob"), backend=ScriptedBackend(), clock=clock)
    try:
        await paired(first, "local")
        reloaded(first, configured(home, "bob", "carol"))
        reloaded(first, configured(home))
        await asyncio.sleep(0)
        assert first.resolver.match(HIM) == "local"
    finally:
        await first.aclose()
    second = await build(configured(home), backend=ScriptedBackend(), clock=clock)
    try:
        assert second.resolver.match(HIM) == "local"
        assert [b.tenant for b in await second.pairing.bindings()] == ["local"]
    finally:
        await second.aclose()


async def test_a_code_issued_before_its_tenant_was_removed_pairs_nobody(
    home: Path, clock: Clock
) -> None:
    roost = await build(configured(home, "alice", "bob"), backend=ScriptedBackend(), clock=clock)
    try:
        code = await roost.pairing.issue("alice")
        late = await roost.pairing.issue("alice")
        reloaded(roost, configured(home, "bob"))
        assert (await roost.pairing.redeem("telegram", "111", code)).outcome != "bound"
        for _ in range(2000):  # the removed tenant's codes go in the background
            if not await roost.database.fetch_value(
                "SELECT count(*) FROM pairing_codes WHERE tenant = 'alice' AND used_at IS NULL"
            ):
                break
            await asyncio.sleep(0.01)
        reloaded(roost, configured(home, "alice", "bob"))  # the name given to someone else
        assert (await roost.pairing.redeem("telegram", "111", late)).outcome != "bound"
        assert roost.resolver.match(HIM) is None
        assert await roost.pairing.bindings() == []
    finally:
        await roost.aclose()


class BrokenAudit(MemoryAudit):
    """An audit chain that cannot be written (a full disk)."""

    async def emit_many(self, events: Sequence[Event]) -> None:
        raise OSError(28, "No space left on device")

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        raise OSError(28, "No space left on device")


async def test_a_revocation_that_cannot_be_audited_removes_nothing(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    roost = await build(
        configured(home, "alice", "bob"),
        backend=ScriptedBackend(),
        audit=BrokenAudit(),
        clock=clock,
    )
    try:
        await paired(roost)
        with caplog.at_level(logging.ERROR):
            reloaded(roost, configured(home, "bob"))
            for _ in range(2000):  # the background task ends with its error logged
                if any(
                    "pairings of removed tenant alice failed" in r.getMessage()
                    for r in caplog.records
                ):
                    break
                await asyncio.sleep(0.01)
        assert [b.tenant for b in await roost.pairing.bindings()] == ["alice"]
        assert roost.resolver.match(HIM) is None  # still refused: alice is not configured
    finally:
        await roost.aclose()


class FullThenFreedAudit(MemoryAudit):
    """An audit chain whose disk is full for its first `full` writes, then freed."""

    def __init__(self, full: int) -> None:
        super().__init__()
        self.full = full

    async def emit_many(self, events: Sequence[Event]) -> None:
        if self.full > 0:
            self.full -= 1
            raise OSError(28, "No space left on device")
        await super().emit_many(events)


async def test_a_removal_that_could_not_be_audited_is_tried_again_until_it_is(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A reload's removal that fails (the audit cannot be written) is tried again while
    the tenant stays out, and removes only once audited: the bindings do not stay behind
    to count again if the tenant comes back (atk2 s39 #4)."""
    audit = FullThenFreedAudit(full=2)
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        hooks = [h for h in reload_hooks(roost, 0.0, retry_s=0.0) if "tenants" in h.live]
        with caplog.at_level(logging.ERROR):
            for hook in hooks:
                hook.apply(configured(home, "bob"))
            await unbinding_done()
        failed = [r.getMessage() for r in caplog.records if "removed tenant" in r.getMessage()]
        assert (
            failed
            == [
                "reload: removing the pairings of removed tenant alice failed"
                " (OSError(28, 'No space left on device')); trying again in 0 s"
            ]
            * 2
        )
        assert await roost.pairing.bindings() == []
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
        for hook in hooks:  # alice configured again: her old person is a stranger
            hook.apply(configured(home, "alice", "bob"))
        assert roost.resolver.match(HIM) is None
    finally:
        await roost.aclose()


async def test_a_half_written_file_fixed_within_the_grace_unpairs_nobody(
    home: Path, clock: Clock
) -> None:
    """The file watch can read roost.toml saved half-way (only alice's table there yet,
    or nothing): bob's people are refused while it is in force, and nobody is unpaired
    for good when the whole file is back before the removal's grace has passed (atk2
    s39 #2; a file with no tenant at all is refused by the reload itself)."""
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost, "bob")
        reloaded(roost, configured(home, "alice"), grace_s=3600)
        assert roost.resolver.match(HIM) is None
        reloaded(roost, configured(home, "alice", "bob"), grace_s=3600)
        await unbinding_done()  # the removal waiting out its grace was called off
        assert roost.resolver.match(HIM) == "bob"
        assert revoked(audit) == []
        assert [b.tenant for b in await roost.pairing.bindings()] == ["bob"]
    finally:
        await roost.aclose()


async def test_a_reload_that_changes_the_restart_only_local_tenant_removes_nothing(
    home: Path, clock: Clock
) -> None:
    """`local_tenant` applies at a restart: until then the local tenant in force keeps
    its pairings (atk2 s39 #3)."""
    roost = await build(configured(home, "bob"), backend=ScriptedBackend(), clock=clock)
    try:
        await paired(roost, "local")
        toml = (home.parent / "roost.toml").read_text()
        (home.parent / "roost.toml").write_text('local_tenant = "me"\n' + toml)
        reloaded(roost, load_settings())
        await unbinding_done()
        assert roost.resolver.match(HIM) == "local"
        assert [b.tenant for b in await roost.pairing.bindings()] == ["local"]
    finally:
        await roost.aclose()


def test_access_list_marks_the_pairings_a_configuration_ignores(home: Path, clock: Clock) -> None:
    """`roost access list` run with a configuration that lacks a paired tenant says that
    pairing is ignored, and what to do, instead of listing it as any other (atk2 s39 #6)."""
    import argparse
    import io

    from bridge.cli.access import run_list

    async def pair_alice() -> None:
        roost = await build(configured(home, "alice"), backend=ScriptedBackend(), clock=clock)
        try:
            await paired(roost)
        finally:
            await roost.aclose()

    asyncio.run(pair_alice())
    out = io.StringIO()
    assert run_list(argparse.Namespace(), configured(home, "bob"), out) == 0
    rows = [line.split("\t") for line in out.getvalue().splitlines()]
    assert rows[1][:3] == ["telegram:111", "alice", "ignored"]
    assert rows[2] == [
        f"ignored: paired to tenants {home.parent / 'roost.toml'} does not configure (alice);"
        " they count again if the tenant is configured again, and `roost access revoke"
        " TENANT` removes them"
    ]
    out = io.StringIO()
    run_list(argparse.Namespace(), configured(home, "alice"), out)
    assert out.getvalue().splitlines()[1].split("\t")[:3] == ["telegram:111", "alice", "paired"]


def test_doctor_names_the_pairings_a_configuration_ignores(home: Path, clock: Clock) -> None:
    """`roost doctor` gives one warning naming the tenants whose pairings this
    configuration ignores, and the command that removes them; none when all count."""
    import io

    from bridge.cli.doctor import check_pairings, report

    async def pair(*tenants: str) -> None:
        roost = await build(configured(home, *tenants), backend=ScriptedBackend(), clock=clock)
        try:
            for n, tenant in enumerate(tenants):
                code = await roost.pairing.issue(tenant)
                assert (await roost.pairing.redeem("telegram", str(n), code)).outcome == "bound"
        finally:
            await roost.aclose()

    asyncio.run(pair("alice", "bob"))
    out = io.StringIO()
    assert report(asyncio.run(check_pairings(configured(home, "bob"), 5.0)), out) == 0
    assert out.getvalue() == (
        f"warn  pairing   1 binding to tenants {home.parent / 'roost.toml'} does not configure"
        " (alice) ignored (roost access list); if that is the service's configuration and"
        " they were removed on purpose: roost access revoke alice\n"
    )
    out = io.StringIO()
    report(asyncio.run(check_pairings(configured(home), 5.0)), out)
    assert "2 bindings to tenants" in out.getvalue()
    assert out.getvalue().endswith(
        "(alice, bob) ignored (roost access list); if that is the"
        " service's configuration and they were removed on purpose: roost access revoke"
        " TENANT (each)\n"
    )
    assert asyncio.run(check_pairings(configured(home, "alice", "bob"), 5.0)) == []


async def test_a_removal_whose_delete_failed_is_not_audited_again_at_its_retry(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """s40: the audit written, then the delete failed (the database, a moment): the retry
    audited the same binding as revoked a second time. Now once, and still removed."""
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        revoke = roost.pairing.revoke_bindings
        failures = [OSError(5, "Input/output error")]

        async def failing_once(bindings: Collection[Binding]) -> list[Binding]:
            if failures:
                raise failures.pop()
            return await revoke(bindings)

        roost.pairing.revoke_bindings = failing_once  # type: ignore[method-assign]
        hooks = [h for h in reload_hooks(roost, 0.0, retry_s=0.0) if "tenants" in h.live]
        with caplog.at_level(logging.ERROR):
            for hook in hooks:
                hook.apply(configured(home, "bob"))
            await unbinding_done()
        assert "Input/output error" in caplog.text  # the first try failed
        assert await roost.pairing.bindings() == []
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
    finally:
        await roost.aclose()


class HeldAudit(MemoryAudit):
    """An audit chain whose batch is written, then held until the test lets it return."""

    def __init__(self) -> None:
        super().__init__()
        self.written, self.release = asyncio.Event(), asyncio.Event()

    async def emit_many(self, events: Sequence[Event]) -> None:
        await super().emit_many(events)
        self.written.set()
        await self.release.wait()


async def test_a_tenant_configured_again_while_its_removal_runs_is_removed_whole(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """A reload that configured the tenant again while its removal ran called it off
    part-way: `pairing.revoked` audited and the binding kept (and counting again), or
    some bindings deleted. The removal under way ends: audited and removed, one log
    line says so; the tenant is back, its old person a stranger."""
    audit = HeldAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        hooks = [h for h in reload_hooks(roost, 0.0) if "tenants" in h.live]
        for hook in hooks:
            hook.apply(configured(home, "bob"))
        await audit.written.wait()  # the revocation audited, its delete not yet done
        with caplog.at_level(logging.WARNING):
            for hook in hooks:
                hook.apply(configured(home, "alice", "bob"))
            audit.release.set()
            await unbinding_done()
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
        assert await roost.pairing.bindings() == []
        assert roost.resolver.match(HIM) is None
        assert "tenant alice is configured again, but its pairings were being removed" in (
            caplog.text
        )
    finally:
        await roost.aclose()


async def test_a_tenant_configured_again_while_a_failed_delete_waits_is_removed_whole(
    home: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """atk s41 #6: the revocation audited, then its delete failed; a reload that configured
    the tenant again while the retry waited called the removal off: `pairing.revoked` in
    the chain and the binding kept (the person could still chat), and a later removal of
    the tenant audited the same binding revoked again. The removal goes on until the
    delete is done, audited once; removed again later, nothing is audited twice."""
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        bound_to, tries = roost.pairing.bound_to, []
        failed = delete_fails_once(roost)

        async def counted(tenants: Collection[str]) -> list[Binding]:
            tries.append(tenants)
            return await bound_to(tenants)

        roost.pairing.bound_to = counted  # type: ignore[method-assign]
        hooks = [h for h in reload_hooks(roost, 0.0, retry_s=0.0) if "tenants" in h.live]
        for hook in hooks:
            hook.apply(configured(home, "bob"))
        await failed.wait()
        assert len(tries) == 1  # between the tries: the retry has not begun
        with caplog.at_level(logging.WARNING):
            for hook in hooks:
                hook.apply(configured(home, "alice", "bob"))
            await unbinding_done()
        assert len(tries) == 2
        assert await roost.pairing.bindings() == []
        assert roost.resolver.match(HIM) is None  # a stranger, as the chain says
        assert "tenant alice is configured again, but its pairings were being removed" in (
            caplog.text
        )
        for hook in hooks:
            hook.apply(configured(home, "bob"))  # removed again later
        await unbinding_done()
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
    finally:
        await roost.aclose()


HER = Inbound("telegram", "222", "222", "hello", "m2")


async def test_a_pairing_made_after_the_tenant_came_back_outlives_the_removal_s_retry(
    home: Path, clock: Clock
) -> None:
    """atk2 s41 #7: the revocation audited, its delete failed, the tenant configured again,
    then someone paired to it: the retry audited that new binding revoked and deleted it,
    and voided the codes issued since. Now the retry deletes only what it had audited."""
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)  # 111 -> alice
        bound_to, go_on, tries = roost.pairing.bound_to, asyncio.Event(), []
        failed = delete_fails_once(roost)

        async def gated(tenants: Collection[str]) -> list[Binding]:
            tries.append(tenants)
            if len(tries) > 1:
                await go_on.wait()  # the retry: once she has paired
            return await bound_to(tenants)

        roost.pairing.bound_to = gated  # type: ignore[method-assign]
        hooks = [h for h in reload_hooks(roost, 0.0, retry_s=0.0) if "tenants" in h.live]
        for hook in hooks:
            hook.apply(configured(home, "bob"))
        await failed.wait()
        for hook in hooks:
            hook.apply(configured(home, "alice", "bob"))  # alice is back
        code = await roost.pairing.issue("alice")
        assert (await roost.pairing.redeem("telegram", "222", code)).outcome == "bound"
        later = await roost.pairing.issue("alice")  # for the next person
        go_on.set()
        await unbinding_done()
        assert len(tries) == 2
        assert roost.resolver.match(HIM) is None  # audited revoked before: gone
        assert roost.resolver.match(HER) == "alice"  # paired after she came back: stays
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
        assert (await roost.pairing.redeem("telegram", "333", later)).outcome == "bound"
    finally:
        await roost.aclose()


async def test_a_binding_audited_revoked_is_not_audited_by_a_later_removal_either(
    home: Path, clock: Clock
) -> None:
    """A removal whose delete failed and that ended before its retry (its task cancelled,
    as at shutdown): the tenant's next removal deletes the binding without auditing it
    revoked a second time."""
    audit = MemoryAudit()
    roost = await build(
        configured(home, "alice", "bob"), backend=ScriptedBackend(), audit=audit, clock=clock
    )
    try:
        await paired(roost)
        failed = delete_fails_once(roost)
        hooks = [h for h in reload_hooks(roost, 0.0, retry_s=3600.0) if "tenants" in h.live]
        for hook in hooks:
            hook.apply(configured(home, "bob"))
        await failed.wait()  # the first removal waits out its retry
        (first,) = [t for t in asyncio.all_tasks() if t.get_name().startswith("unbind removed")]
        first.cancel()
        await unbinding_done()
        assert [b.identity for b in await roost.pairing.bindings()] == ["111"]
        for hook in hooks:
            hook.apply(configured(home, "alice", "bob"))
        for hook in hooks:
            hook.apply(configured(home, "bob"))  # a new removal of alice
        await unbinding_done()
        assert await roost.pairing.bindings() == []
        assert revoked(audit) == [
            ("alice", {"channel": "telegram", "identity": "111", "by": "config"})
        ]
    finally:
        await roost.aclose()

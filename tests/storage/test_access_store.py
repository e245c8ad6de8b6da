"""Who is allowed in (`bridge.core.access.Access`) over the pairing store on both backends:
what a stranger, a person pairing and a revoked person see, message by message, with a
second connection standing for `roost pair`, `roost access revoke` or another instance."""

from __future__ import annotations

from bridge.core.access import ALREADY, Access
from bridge.core.pairing import PairingStore
from bridge.core.tenants import TenantResolver, identity_rule
from bridge.types.audit_sink import MemoryAudit
from bridge.types.messages import Final, Inbound
from tests.conftest import Clock
from tests.storage.conftest import OpenDb

ALICE, STRANGER = "111", "999"


def said(who: str, text: str) -> Inbound:
    return Inbound("telegram", who, who, text, "1")


async def gate(open_db: OpenDb, clock: Clock) -> tuple[Access, PairingStore, MemoryAudit]:
    """An `Access` as the daemon builds it (configured Alice, then pairings to configured
    tenants), over its own connection, with its mirror loaded."""
    pairing = PairingStore(await open_db(), clock)
    await pairing.load()
    rules = [
        identity_rule({"telegram": {ALICE: "alice"}}),
        pairing.rule({"alice", "bob"}.__contains__),
    ]
    audit = MemoryAudit()
    return Access(TenantResolver(rules), pairing, audit), pairing, audit


async def test_a_stranger_pairs_is_served_and_is_a_stranger_again_once_revoked(
    open_db: OpenDb, clock: Clock
) -> None:
    access, _, audit = await gate(open_db, clock)
    operator = PairingStore(await open_db(), clock)  # `roost pair`, `roost access revoke`
    assert await access.admit(said(ALICE, "hi")) == "alice"
    refused = await access.admit(said(STRANGER, "hello?"))
    assert isinstance(refused, Final) and "I don't know you" in refused.text
    assert await access.admit(said(STRANGER, "hello??")) == Final("", "silent"), "told once"
    wrong = await access.admit(said(STRANGER, "/pair WRONGONE"))
    assert isinstance(wrong, Final) and "4 more attempts" in wrong.text
    code = await operator.issue("bob")
    paired = await access.admit(said(STRANGER, f"/pair {code}"))
    assert isinstance(paired, Final) and "as **bob**" in paired.text
    assert await access.admit(said(STRANGER, "hi, it's bob")) == "bob"
    again = await access.admit(said(STRANGER, f"/pair {code}"))
    assert isinstance(again, Final) and "not valid" in again.text, "a code works once"
    assert await operator.revoke("telegram", STRANGER) == "bob"
    # the very next message, without waiting for the notify: the binding is read first
    gone = await access.admit(said(STRANGER, "still there?"))
    assert isinstance(gone, Final) and "I don't know you" in gone.text, "told again, once"
    # the second wrong code of the hour is only counted (StrangerAudit)
    assert [e[0] for e in audit.events] == ["access.refused", "pairing.failed", "pairing.used"]


async def test_a_pairing_made_by_another_instance_admits_the_next_message(
    open_db: OpenDb, clock: Clock
) -> None:
    """The person paired through instance two; their next message reaches instance one,
    whose mirror has not heard of it yet: it reads the binding and admits them."""
    one, _, _ = await gate(open_db, clock)
    two, pairing_two, _ = await gate(open_db, clock)
    code = await pairing_two.issue("bob")
    paired = await two.admit(said(STRANGER, f"/pair {code}"))
    assert isinstance(paired, Final) and "as **bob**" in paired.text
    assert await one.admit(said(STRANGER, "hello from the other side")) == "bob"


async def test_a_configured_person_needs_no_code(open_db: OpenDb, clock: Clock) -> None:
    access, pairing, _ = await gate(open_db, clock)
    code = await pairing.issue("bob")
    assert await access.admit(said(ALICE, f"/pair {code}")) == Final(ALREADY, "command")
    assert (await pairing.redeem("telegram", "5", code)).outcome == "bound", "code kept"
    assert (await pairing.last_seen()) == {}, "a /pair is not a message of an admitted person"
    assert await access.admit(said(ALICE, "hi")) == "alice"
    assert await pairing.last_seen() == {("telegram", ALICE): clock.now}

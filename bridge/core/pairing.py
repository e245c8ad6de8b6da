"""Pairing: binding a chat identity to a tenant with a one-time code.

`roost pair TENANT` issues an 8-character code from an alphabet without
look-alikes (no 0/O, 1/I/L), valid for one hour and stored only as its
SHA-256 hash; it is printed once and never logged. The person sends
`/pair CODE` to the bot in a private chat and is bound to that tenant.
Wrong codes are counted per identity; five failures within an hour lock
the identity out for an hour, during which codes are not even checked.
The store also remembers who was already told "I don't know you", so an
unknown person hears it once, not once per message; both stranger tables
are bounded (`MAX_STRANGER_ROWS`, the least recently written forgotten
first, by their `seq`, but never a running lockout; expired failure windows
are dropped), so a flood of strangers cannot grow the database without bound. A binding holds only
while its tenant is configured (`rule(known)`), and `revoke` removes it:
both take effect on the next message. Looking a binding up for a message
(`seen`) stamps its `last_seen`, at most once a minute per identity
(`SEEN_EVERY_S`), so the hot path writes rarely. No telegram import; the
clock is injected.

The store runs on the `Database` protocol (`bridge.storage`, SQLite or
PostgreSQL) and every write is ONE statement, never a transaction held
across an await (the rule of `bridge.schedule.outbox` while roost.db has a
second way in): a code is redeemed by one conditional `UPDATE ... WHERE
used_at IS NULL ... RETURNING tenant`, so of two instances racing to redeem
one code exactly one gets the row back; the binding is written after it
(a crash between the two leaves the code used and nobody bound: the person
was not told "Paired" and asks for a new code). A wrong code is counted by
one upsert that also resets an expired window and sets the lockout, so
racing attempts of one identity are all counted.

The resolver's rules are synchronous (`TenantResolver.match`, read by
channels before a message reaches the core), so the store keeps a mirror of
the bindings in memory: filled by `load()` at start, kept by this store's
own writes, refreshed for one identity by `seen` and `bound_tenant` (which
`Access.admit` awaits before it decides, so a binding another process made
or removed counts from that identity's next message), and reloaded whole by
`watch()` when any process notifies `TOPIC` (every binding write does:
`roost access revoke`, another instance on PostgreSQL).

Bindings to a tenant the configuration does not have are ignored by the
rule. A running daemon's reload that removes a tenant removes its bindings
and unused codes for good (`unbind_removed`, audited first); a start only
warns about such bindings (`warn_unconfigured`): any command builds a roost,
and one run with another configuration than the service's (ROOST_CONFIG
unset under sudo, say) must not unpair anyone. A code whose tenant was
removed since it was issued pairs nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from bridge.core.tenants import Rule
from bridge.core.words import count
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database, Row
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Inbound

log = logging.getLogger(__name__)

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 3600.0
MAX_FAILURES = 5
LOCKOUT_S = 3600.0
FAILURE_WINDOW_S = 3600.0
MAX_STRANGER_ROWS = 10_000  # per table: refusal notices, failure counters
SEEN_EVERY_S = 60.0  # last_seen is written at most this often per identity
STAMP_EVERY_S = 5.0  # identity_seen: at most this often per identity (roost access list)
TOPIC: Final = "pairing"  # notified by every write of a binding (the mirrors reload)

Key = tuple[str, str]  # (channel, identity)

# The next `seq` of a stranger table: one more than the largest (an index lookup).
_NEXT_SEQ = "(SELECT COALESCE(max(seq), 0) + 1 FROM {table})"

# One wrong code, counted in one statement: a new counter; or the old one reset when its
# window passed or its lockout ended, else one more; locked at MAX_FAILURES. A counter
# still locked is left alone (no row comes back).
_FAILED = f"""
INSERT INTO pairing_failures (channel, identity, failures, window_start, locked_until, seq)
VALUES (:channel, :identity, 1, :now, CASE WHEN 1 >= :max THEN CAST(:lock AS DOUBLE PRECISION)
        ELSE 0 END,
        {_NEXT_SEQ.format(table="pairing_failures")})
ON CONFLICT (channel, identity) DO UPDATE SET
    failures = CASE WHEN :now - pairing_failures.window_start > :window
                      OR pairing_failures.locked_until != 0
                    THEN 1 ELSE pairing_failures.failures + 1 END,
    window_start = CASE WHEN :now - pairing_failures.window_start > :window
                          OR pairing_failures.locked_until != 0
                        THEN :now ELSE pairing_failures.window_start END,
    locked_until = CASE WHEN :now - pairing_failures.window_start <= :window
                          AND pairing_failures.locked_until = 0
                          AND pairing_failures.failures + 1 >= :max
                        THEN CAST(:lock AS DOUBLE PRECISION) ELSE 0 END,
    seq = excluded.seq
WHERE pairing_failures.locked_until <= :now
RETURNING failures, locked_until
"""


def normalize(code: str) -> str:
    """What a person typed -> the canonical code (case, spaces, dashes ignored)."""
    return "".join(ch for ch in code.upper() if ch not in " -_\t")


def code_hash(code: str) -> str:
    return hashlib.sha256(f"roost-pair:{normalize(code)}".encode()).hexdigest()


def well_formed(normal: str) -> bool:
    return len(normal) == CODE_LENGTH and set(normal) <= set(ALPHABET)


@dataclass(frozen=True, slots=True)
class Redeemed:
    outcome: Literal["bound", "wrong", "locked"]
    tenant: str | None = None
    failures_left: int = 0
    locked_until: float = 0.0
    just_locked: bool = False  # this attempt caused the lockout


class Binding(NamedTuple):
    """One paired identity: who, on which channel, to which tenant, since when, last seen."""

    channel: str
    identity: str
    tenant: str
    bound_at: float
    last_seen: float | None = None


_BINDING_COLUMNS = "channel, identity, tenant, bound_at, last_seen"


def _binding(row: Row) -> Binding:
    c, i, t, at, seen = row
    return Binding(str(c), str(i), str(t), float(at), None if seen is None else float(seen))


class PairingStore:
    def __init__(
        self,
        db: Database,
        clock: Callable[[], float] = time.time,
        rand: Callable[[str], str] = secrets.choice,
    ) -> None:
        self.db = db
        self._clock = clock
        self._rand = rand
        self._stamped: dict[Key, float] = {}  # identity_seen writes, per identity
        self._bound: dict[Key, str] = {}  # the mirror the synchronous rule reads
        # the tenants a code may pair to: every tenant until `rule` is given the configured
        self._known: Callable[[str], bool] = lambda tenant: True

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    # -- the mirror -----------------------------------------------------------------------

    async def load(self) -> None:
        """Read every binding into the mirror (at start, and after another process wrote)."""
        rows = await self.db.fetch_all("SELECT channel, identity, tenant FROM pairing_bindings")
        self._bound = {(str(c), str(i)): str(t) for c, i, t in rows}

    async def watch(self) -> None:
        """Reload the mirror at every notify of `TOPIC`, from any process; runs until
        cancelled (the composition root starts it)."""
        async with self.db.subscribe(TOPIC) as notified:
            while True:
                await notified.wait()
                try:
                    await self.load()
                except StorageError as exc:  # the database is away: the next notify retries
                    log.warning("pairing: the bindings could not be reloaded: %s", exc)

    def mirrored(self, channel: str, identity: str) -> bool:
        """Whether the mirror holds a binding of this identity (it may be stale)."""
        return (channel, identity) in self._bound

    def _mirror(self, key: Key, tenant: str | None) -> None:
        if tenant is None:
            self._bound.pop(key, None)
        else:
            self._bound[key] = tenant

    # -- codes ----------------------------------------------------------------------------

    async def issue(self, tenant: str) -> str:
        """A fresh code for `tenant`; only its hash is stored."""
        now = self._clock()
        await self.db.execute("DELETE FROM pairing_codes WHERE expires_at < ?", (now - 86400,))
        while True:
            code = "".join(self._rand(ALPHABET) for _ in range(CODE_LENGTH))
            added = await self.db.execute(
                "INSERT INTO pairing_codes (code_hash, tenant, created_at, expires_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (code_hash) DO NOTHING",
                (code_hash(code), tenant, now, now + CODE_TTL_S),
            )
            if added == 1:
                return code

    async def redeem(self, channel: str, identity: str, code: str) -> Redeemed:
        """Try a code for an identity; binds on success, counts failures otherwise."""
        now = self._clock()
        locked = await self.db.fetch_value(
            "SELECT locked_until FROM pairing_failures WHERE channel = ? AND identity = ?",
            (channel, identity),
        )
        if locked is not None and float(locked) > now:
            return Redeemed("locked", locked_until=float(locked))
        normal = normalize(code)
        tenant = None
        if well_formed(normal):
            tenant = await self.db.fetch_value(  # the claim: one winner
                "UPDATE pairing_codes SET used_at = :now, used_by = :who"
                " WHERE code_hash = :hash AND used_at IS NULL AND expires_at >= :now"
                " RETURNING tenant",
                {"now": now, "who": f"{channel}:{identity}", "hash": code_hash(normal)},
            )
        if tenant is None or not self._known(str(tenant)):  # its tenant removed since
            return await self._failed(channel, identity, now)
        await self._bind(channel, identity, str(tenant), now)
        return Redeemed("bound", tenant=str(tenant))

    async def _bind(self, channel: str, identity: str, tenant: str, now: float) -> None:
        await self.db.execute(
            "INSERT INTO pairing_bindings (channel, identity, tenant, bound_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (channel, identity) DO UPDATE SET"
            " tenant = excluded.tenant, bound_at = excluded.bound_at, last_seen = NULL",
            (channel, identity, tenant, now),
        )
        self._mirror((channel, identity), tenant)
        for table in ("pairing_failures", "refusal_notices"):
            await self.db.execute(
                f"DELETE FROM {table} WHERE channel = ? AND identity = ?", (channel, identity)
            )
        await self.db.notify(TOPIC)

    async def _failed(self, channel: str, identity: str, now: float) -> Redeemed:
        params = {
            "channel": channel,
            "identity": identity,
            "now": now,
            "lock": now + LOCKOUT_S,
            "window": FAILURE_WINDOW_S,
            "max": MAX_FAILURES,
        }
        row = await self.db.fetch_one(_FAILED, params)
        if row is None:  # locked meanwhile by a racing attempt
            locked = await self.db.fetch_value(
                "SELECT locked_until FROM pairing_failures WHERE channel = ? AND identity = ?",
                (channel, identity),
            )
            return Redeemed("locked", locked_until=float(locked or now + LOCKOUT_S))
        failures, locked_until = int(row[0]), float(row[1])
        if failures == 1:  # a new window: the moment to drop expired ones
            await self._prune_failures(now)
        if locked_until:
            return Redeemed("locked", locked_until=locked_until, just_locked=True)
        return Redeemed("wrong", failures_left=MAX_FAILURES - failures)

    async def _prune_failures(self, now: float) -> None:
        await self.db.execute(
            "DELETE FROM pairing_failures WHERE window_start < ? AND locked_until < ?",
            (now - FAILURE_WINDOW_S, now),
        )
        # a running lockout is never what makes room: 10,000 fresh identities failing
        # once each pushed a locked one out, and its next guess was "wrong, 4 left"
        await _keep_newest(self.db, "pairing_failures", " AND locked_until < ?", (now,))

    # -- bindings -------------------------------------------------------------------------

    async def bound_tenant(self, channel: str, identity: str) -> str | None:
        """The tenant of a binding, read from the database (the mirror follows)."""
        tenant = await self.db.fetch_value(
            "SELECT tenant FROM pairing_bindings WHERE channel = ? AND identity = ?",
            (channel, identity),
        )
        found = None if tenant is None else str(tenant)
        self._mirror((channel, identity), found)
        return found

    async def should_refuse_loudly(self, channel: str, identity: str) -> bool:
        """True exactly once per identity: the first refusal is sent, later ones are not."""
        added = await self.db.execute(
            "INSERT INTO refusal_notices (channel, identity, at, seq) VALUES (?, ?, ?, "
            f"{_NEXT_SEQ.format(table='refusal_notices')}) ON CONFLICT (channel, identity)"
            " DO NOTHING",
            (channel, identity, self._clock()),
        )
        if added != 1:
            return False
        await _keep_newest(self.db, "refusal_notices")
        return True

    async def revoke(self, channel: str, identity: str) -> str | None:
        """Remove a binding; returns the tenant it pointed to (None: there was none)."""
        tenant = await self.db.fetch_value(
            "DELETE FROM pairing_bindings WHERE channel = ? AND identity = ? RETURNING tenant",
            (channel, identity),
        )
        self._mirror((channel, identity), None)
        if tenant is None:
            return None
        await self.db.notify(TOPIC)
        return str(tenant)

    async def revoke_tenant(self, tenant: str) -> list[Binding]:
        """Remove every binding to `tenant`; returns the bindings removed, oldest first."""
        return await self._revoked("tenant = ?", (tenant,))

    def unconfigured(self, known: Collection[str]) -> list[Binding]:
        """The bindings to tenants not in `known`, from the mirror (no statement): the
        resolver ignores them; `build` warns about them, it never removes them (a command
        run with another configuration than the service's must not unpair anyone)."""
        return [
            Binding(channel, identity, tenant, 0.0, None)
            for (channel, identity), tenant in sorted(self._bound.items())
            if tenant not in known
        ]

    async def bound_to(self, tenants: Collection[str]) -> list[Binding]:
        """Every binding to one of `tenants`, oldest first (nothing removed)."""
        names = tuple(sorted(tenants))
        if not names:
            return []
        rows = await self.db.fetch_all(
            f"SELECT {_BINDING_COLUMNS} FROM pairing_bindings"
            f" WHERE tenant IN ({','.join('?' * len(names))})",
            names,
        )
        return sorted((_binding(row) for row in rows), key=lambda b: (b.bound_at, b.identity))

    async def revoke_codes(self, tenants: Collection[str]) -> None:
        """Remove the codes not yet used that were issued for one of `tenants`."""
        names = tuple(sorted(tenants))
        if names:
            marks = ",".join("?" * len(names))
            await self.db.execute(
                f"DELETE FROM pairing_codes WHERE used_at IS NULL AND tenant IN ({marks})",
                names,
            )

    async def revoke_bindings(self, bindings: Collection[Binding]) -> list[Binding]:
        """Remove exactly these bindings (each only while it still points at the same
        tenant); returns those removed, oldest first."""
        gone: list[Binding] = []
        for b in bindings:
            gone += await self._revoked(
                "channel = ? AND identity = ? AND tenant = ?", (b.channel, b.identity, b.tenant)
            )
        return sorted(gone, key=lambda b: (b.bound_at, b.identity))

    async def _revoked(self, where: str, params: tuple[str, ...]) -> list[Binding]:
        """Remove the bindings `where` picks, out of the mirror too; those removed, oldest
        first (every process told when there were some)."""
        rows = await self.db.fetch_all(
            f"DELETE FROM pairing_bindings WHERE {where} RETURNING {_BINDING_COLUMNS}", params
        )
        gone = sorted((_binding(row) for row in rows), key=lambda b: (b.bound_at, b.identity))
        for b in gone:
            self._mirror((b.channel, b.identity), None)
        if gone:
            await self.db.notify(TOPIC)
        return gone

    async def bindings(self) -> list[Binding]:
        """Every binding, oldest first."""
        rows = await self.db.fetch_all(
            f"SELECT {_BINDING_COLUMNS} FROM pairing_bindings ORDER BY bound_at, channel, identity"
        )
        return [_binding(row) for row in rows]

    async def seen(self, channel: str, identity: str) -> str | None:
        """The tenant of a binding, read from the database (the mirror follows), stamping
        its last_seen (at most once per SEEN_EVERY_S)."""
        row = await self.db.fetch_one(
            "SELECT tenant, last_seen FROM pairing_bindings WHERE channel = ? AND identity = ?",
            (channel, identity),
        )
        key = (channel, identity)
        if row is None:
            self._mirror(key, None)
            return None
        tenant, last_seen = str(row[0]), row[1]
        self._mirror(key, tenant)
        now = self._clock()
        if last_seen is None or now - float(last_seen) >= SEEN_EVERY_S:
            await self.db.execute(
                "UPDATE pairing_bindings SET last_seen = ? WHERE channel = ? AND identity = ?",
                (now, channel, identity),
            )
        return tenant

    async def stamp(self, channel: str, identity: str, tenant: str) -> None:
        """An admitted identity wrote now (every channel, configured or paired); written
        at most once per STAMP_EVERY_S per identity, so `roost access list` is current."""
        now = self._clock()
        key = (channel, identity)
        if now - self._stamped.get(key, float("-inf")) < STAMP_EVERY_S:
            return
        self._stamped[key] = now
        await self.db.execute(
            "INSERT INTO identity_seen (channel, identity, tenant, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (channel, identity) DO UPDATE SET tenant = excluded.tenant,"
            " at = excluded.at",
            (channel, identity, tenant, now),
        )

    async def last_seen(self) -> dict[Key, float]:
        """(channel, identity) -> when it last wrote (see `stamp`)."""
        rows = await self.db.fetch_all("SELECT channel, identity, at FROM identity_seen")
        return {(str(c), str(i)): float(at) for c, i, at in rows}

    def rule(self, known: Callable[[str], bool] = lambda tenant: True) -> Rule:
        """A TenantResolver rule: paired identities of any channel whose tenant is `known`
        (read from the mirror: `Access.admit` refreshes it for the identity first).

        A binding to a tenant that is no longer configured resolves to nothing:
        the person is a stranger again from their next message on.
        """

        self._known = known  # the tenants a code may still pair to (`redeem`)

        def rule(inbound: Inbound) -> str | None:
            tenant = self._bound.get((inbound.channel, inbound.identity))
            return tenant if tenant is not None and known(tenant) else None

        return rule


async def _keep_newest(
    db: Database, table: str, only: str = "", args: tuple[object, ...] = ()
) -> None:
    """Forget all but the newest MAX_STRANGER_ROWS rows (`seq` order = last written);
    `only` (SQL starting with AND, its `args`) narrows what may be forgotten."""
    await db.execute(
        f"DELETE FROM {table} WHERE seq <= (SELECT max(seq) FROM {table}) - ?{only}",
        (MAX_STRANGER_ROWS, *args),
    )


def watching(store: PairingStore) -> Callable[[], object]:
    """Start `store.watch()` in a task; the closer that cancels it (for `Roost.aclose`)."""
    task = asyncio.get_running_loop().create_task(store.watch(), name="pairing-watch")

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return stop


async def unbind_removed(
    store: PairingStore,
    audit: AuditSink,
    removed: Collection[str],
    audited: set[tuple[str, str, str, float]] | None = None,
    *,
    back: bool = False,
) -> list[Binding]:
    """A reload removed the tenants `removed`: their bindings and unused codes go for good,
    each binding audited as `pairing.revoked` by "config" BEFORE it is removed (an audit
    that cannot be written removes nothing: raised), and counted in the log. Only a
    running daemon's reload calls it, for tenants its own configuration had. `audited`:
    the bindings (channel, identity, tenant, bound_at) an earlier try of the same removal
    audited before it failed, not audited again; this try's are added to it. `back`: the
    tenants are configured again (a removal under way finishing): only the bindings already
    in `audited` go, and no code; a binding made since, and the codes issued since, stay."""
    bindings = await store.bound_to(removed)
    seen = audited if audited is not None else set()
    if back:
        bindings = [b for b in bindings if (b.channel, b.identity, b.tenant, b.bound_at) in seen]
    fresh = [b for b in bindings if (b.channel, b.identity, b.tenant, b.bound_at) not in seen]
    if fresh:
        await audit.emit_many(
            [
                (
                    "pairing.revoked",
                    b.tenant,
                    {"channel": b.channel, "identity": b.identity, "by": "config"},
                )
                for b in fresh
            ]
        )
        seen.update((b.channel, b.identity, b.tenant, b.bound_at) for b in fresh)
    if not back:
        await store.revoke_codes(removed)
    gone = await store.revoke_bindings(bindings)  # exactly those audited
    if gone:
        log.warning(
            "pairing: %s to tenants the reload removed (%s) revoked: those people are"
            " strangers again, and must /pair again if the tenant comes back",
            count(len(gone), "binding"),
            ", ".join(sorted({b.tenant for b in gone})),
        )
    return gone


def warn_unconfigured(store: PairingStore, known: Collection[str], source: str) -> None:
    """Say (WARNING) which pairings point at tenants this configuration (read from
    `source`) does not have: they are ignored, never removed here (a command run with
    another ROOST_CONFIG than the service's would unpair everyone); the operator removes
    them, or configures the tenant again (then they count again)."""
    stale = store.unconfigured(known)
    if stale:
        tenants = sorted({b.tenant for b in stale})
        log.warning(
            "pairing: %s to tenants %s does not configure (%s) ignored; if that is the"
            " service's configuration and they were removed on purpose: roost access"
            " revoke %s",
            count(len(stale), "binding"),
            source,
            ", ".join(tenants),
            tenants[0] if len(tenants) == 1 else "TENANT (each)",
        )

"""Pairing: binding a chat identity to a tenant with a one-time code.

`roost pair TENANT` issues an 8-character code from an alphabet without
look-alikes (no 0/O, 1/I/L), valid for one hour and stored only as its
SHA-256 hash; it is printed once and never logged. The person sends
`/pair CODE` to the bot in a private chat and is bound to that tenant.
Wrong codes are counted per identity; five failures within an hour lock
the identity out for an hour, during which codes are not even checked.
The store also remembers who was already told "I don't know you", so an
unknown person hears it once, not once per message; both stranger tables
are bounded (`MAX_STRANGER_ROWS`, oldest forgotten first; expired failure
windows are dropped), so a flood of strangers cannot grow the database
without bound. A binding holds only while its tenant is configured
(`rule(known)`), and `revoke` removes it: both take effect on the next
message. Resolving a binding stamps its `last_seen`, at most once a minute
per identity (`SEEN_EVERY_S`), so the hot path writes rarely. Plain
SQLite; no telegram import; the clock is injected.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from bridge.core.tenants import Rule
from bridge.types.messages import Inbound

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 3600.0
MAX_FAILURES = 5
LOCKOUT_S = 3600.0
FAILURE_WINDOW_S = 3600.0
MAX_STRANGER_ROWS = 10_000  # per table: refusal notices, failure counters
SEEN_EVERY_S = 60.0  # last_seen is written at most this often per identity
STAMP_EVERY_S = 5.0  # identity_seen: at most this often per identity (roost access list)


def normalize(code: str) -> str:
    """What a person typed -> the canonical code (case, spaces, dashes ignored)."""
    return "".join(ch for ch in code.upper() if ch not in " -_\t")


def code_hash(code: str) -> str:
    return hashlib.sha256(f"roost-pair:{normalize(code)}".encode()).hexdigest()


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


class PairingStore:
    def __init__(
        self,
        db: sqlite3.Connection,
        clock: Callable[[], float] = time.time,
        rand: Callable[[str], str] = secrets.choice,
    ) -> None:
        self._db = db
        self._clock = clock
        self._rand = rand
        self._stamped: dict[tuple[str, str], float] = {}  # identity_seen writes, per identity

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    def issue(self, tenant: str) -> str:
        """A fresh code for `tenant`; only its hash is stored."""
        now = self._clock()
        self._db.execute("DELETE FROM pairing_codes WHERE expires_at < ?", (now - 86400,))
        while True:
            code = "".join(self._rand(ALPHABET) for _ in range(CODE_LENGTH))
            try:
                self._db.execute(
                    "INSERT INTO pairing_codes (code_hash, tenant, created_at, expires_at)"
                    " VALUES (?, ?, ?, ?)",
                    (code_hash(code), tenant, now, now + CODE_TTL_S),
                )
                return code
            except sqlite3.IntegrityError:
                continue

    def redeem(self, channel: str, identity: str, code: str) -> Redeemed:
        """Try a code for an identity; binds on success, counts failures otherwise."""
        now = self._clock()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            result = self._redeem(channel, identity, code, now)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return result

    def _redeem(self, channel: str, identity: str, code: str, now: float) -> Redeemed:
        row = self._db.execute(
            "SELECT failures, window_start, locked_until FROM pairing_failures"
            " WHERE channel = ? AND identity = ?",
            (channel, identity),
        ).fetchone()
        failures, window_start, locked_until = row if row else (0, now, 0.0)
        if locked_until > now:
            return Redeemed("locked", locked_until=locked_until)
        if now - window_start > FAILURE_WINDOW_S or locked_until:
            failures, window_start = 0, now
        normal = normalize(code)
        found = None
        if len(normal) == CODE_LENGTH and set(normal) <= set(ALPHABET):
            found = self._db.execute(
                "SELECT tenant FROM pairing_codes WHERE code_hash = ? AND used_at IS NULL"
                " AND expires_at >= ?",
                (code_hash(normal), now),
            ).fetchone()
        if found is None:
            failures += 1
            locked = now + LOCKOUT_S if failures >= MAX_FAILURES else 0.0
            self._db.execute(
                "INSERT OR REPLACE INTO pairing_failures VALUES (?, ?, ?, ?, ?)",
                (channel, identity, failures, window_start, locked),
            )
            if row is None:
                self._prune_failures(now)
            if locked:
                return Redeemed("locked", locked_until=locked, just_locked=True)
            return Redeemed("wrong", failures_left=MAX_FAILURES - failures)
        (tenant,) = found
        self._db.execute(
            "UPDATE pairing_codes SET used_at = ?, used_by = ? WHERE code_hash = ?",
            (now, f"{channel}:{identity}", code_hash(normal)),
        )
        self._db.execute(
            "INSERT OR REPLACE INTO pairing_bindings (channel, identity, tenant, bound_at)"
            " VALUES (?, ?, ?, ?)",
            (channel, identity, tenant, now),
        )
        for table in ("pairing_failures", "refusal_notices"):
            self._db.execute(
                f"DELETE FROM {table} WHERE channel = ? AND identity = ?", (channel, identity)
            )
        return Redeemed("bound", tenant=tenant)

    def _prune_failures(self, now: float) -> None:
        self._db.execute(
            "DELETE FROM pairing_failures WHERE window_start < ? AND locked_until < ?",
            (now - FAILURE_WINDOW_S, now),
        )
        _keep_newest(self._db, "pairing_failures")

    def bound_tenant(self, channel: str, identity: str) -> str | None:
        row = self._db.execute(
            "SELECT tenant FROM pairing_bindings WHERE channel = ? AND identity = ?",
            (channel, identity),
        ).fetchone()
        return row[0] if row else None

    def should_refuse_loudly(self, channel: str, identity: str) -> bool:
        """True exactly once per identity: the first refusal is sent, later ones are not."""
        cur = self._db.execute(
            "INSERT OR IGNORE INTO refusal_notices VALUES (?, ?, ?)",
            (channel, identity, self._clock()),
        )
        if cur.rowcount != 1:
            return False
        _keep_newest(self._db, "refusal_notices")
        return True

    def revoke(self, channel: str, identity: str) -> str | None:
        """Remove a binding; returns the tenant it pointed to (None: there was none)."""
        tenant = self.bound_tenant(channel, identity)
        self._db.execute(
            "DELETE FROM pairing_bindings WHERE channel = ? AND identity = ?", (channel, identity)
        )
        return tenant

    def revoke_tenant(self, tenant: str) -> list[Binding]:
        """Remove every binding to `tenant`; returns the bindings removed."""
        gone = [b for b in self.bindings() if b.tenant == tenant]
        self._db.execute("DELETE FROM pairing_bindings WHERE tenant = ?", (tenant,))
        return gone

    def bindings(self) -> list[Binding]:
        """Every binding, oldest first."""
        rows = self._db.execute(
            "SELECT channel, identity, tenant, bound_at, last_seen FROM pairing_bindings"
            " ORDER BY bound_at"
        )
        return [
            Binding(str(c), str(i), str(t), float(at), None if seen is None else float(seen))
            for c, i, t, at, seen in rows
        ]

    def seen(self, channel: str, identity: str) -> str | None:
        """The tenant of a binding, stamping its last_seen (at most once per SEEN_EVERY_S)."""
        row = self._db.execute(
            "SELECT tenant, last_seen FROM pairing_bindings WHERE channel = ? AND identity = ?",
            (channel, identity),
        ).fetchone()
        if row is None:
            return None
        tenant, last_seen = row
        now = self._clock()
        if last_seen is None or now - last_seen >= SEEN_EVERY_S:
            self._db.execute(
                "UPDATE pairing_bindings SET last_seen = ? WHERE channel = ? AND identity = ?",
                (now, channel, identity),
            )
        return str(tenant)

    def stamp(self, channel: str, identity: str, tenant: str) -> None:
        """An admitted identity wrote now (every channel, configured or paired); written
        at most once per STAMP_EVERY_S per identity, so `roost access list` is current."""
        now = self._clock()
        key = (channel, identity)
        if now - self._stamped.get(key, float("-inf")) < STAMP_EVERY_S:
            return
        self._stamped[key] = now
        self._db.execute(
            "INSERT INTO identity_seen (channel, identity, tenant, at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (channel, identity) DO UPDATE SET tenant = excluded.tenant,"
            " at = excluded.at",
            (channel, identity, tenant, now),
        )

    def last_seen(self) -> dict[tuple[str, str], float]:
        """(channel, identity) -> when it last wrote (see `stamp`)."""
        rows = self._db.execute("SELECT channel, identity, at FROM identity_seen").fetchall()
        return {(str(c), str(i)): float(at) for c, i, at in rows}

    def rule(self, known: Callable[[str], bool] = lambda tenant: True) -> Rule:
        """A TenantResolver rule: paired identities of any channel whose tenant is `known`.

        A binding to a tenant that is no longer configured resolves to nothing:
        the person is a stranger again from their next message on.
        """

        def rule(inbound: Inbound) -> str | None:
            tenant = self.seen(inbound.channel, inbound.identity)
            return tenant if tenant is not None and known(tenant) else None

        return rule


def _keep_newest(db: sqlite3.Connection, table: str) -> None:
    """Forget all but the newest MAX_STRANGER_ROWS rows (rowid order = last written)."""
    db.execute(
        f"DELETE FROM {table} WHERE rowid <= (SELECT max(rowid) FROM {table}) - ?",
        (MAX_STRANGER_ROWS,),
    )

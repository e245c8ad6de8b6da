"""Pairing: binding a chat identity to a tenant with a one-time code.

`roost pair TENANT` issues an 8-character code from an alphabet without
look-alikes (no 0/O, 1/I/L), valid for one hour and stored only as its
SHA-256 hash; it is printed once and never logged. The person sends
`/pair CODE` to the bot in a private chat and is bound to that tenant.
Wrong codes are counted per identity; five failures within an hour lock
the identity out for an hour, during which codes are not even checked.
The store also remembers who was already told "I don't know you", so an
unknown person hears it once, not once per message. Plain SQLite; no
telegram import; the clock is injected.
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from bridge.cli_support import tenant_arg, with_roost
from bridge.messages import Inbound
from bridge.tenants import Rule

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL_S = 3600.0
MAX_FAILURES = 5
LOCKOUT_S = 3600.0
FAILURE_WINDOW_S = 3600.0


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
            if locked:
                return Redeemed("locked", locked_until=locked, just_locked=True)
            return Redeemed("wrong", failures_left=MAX_FAILURES - failures)
        (tenant,) = found
        self._db.execute(
            "UPDATE pairing_codes SET used_at = ?, used_by = ? WHERE code_hash = ?",
            (now, f"{channel}:{identity}", code_hash(normal)),
        )
        self._db.execute(
            "INSERT OR REPLACE INTO pairing_bindings VALUES (?, ?, ?, ?)",
            (channel, identity, tenant, now),
        )
        self._db.execute(
            "DELETE FROM pairing_failures WHERE channel = ? AND identity = ?", (channel, identity)
        )
        return Redeemed("bound", tenant=tenant)

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
        return cur.rowcount == 1

    def rule(self) -> Rule:
        """A TenantResolver rule: paired identities of any channel."""

        def rule(inbound: Inbound) -> str | None:
            return self.bound_tenant(inbound.channel, inbound.identity)

        return rule


def pair_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("tenant", type=tenant_arg, help="the tenant the person will be bound to")


def pair_command(args: argparse.Namespace, settings: Any) -> int:
    """`roost pair TENANT`: print a one-time code (never logged, stored hashed)."""
    import asyncio

    async def body(roost: Any) -> int:
        roost.tenant_dirs(args.tenant)
        code = PairingStore(roost.db).issue(args.tenant)
        await roost.audit.emit("pairing.issued", args.tenant, {"ttl_s": int(CODE_TTL_S)})
        minutes = int(CODE_TTL_S // 60)
        print(f"Pairing code for tenant {args.tenant}: {code}")
        print(f"Valid for {minutes} minutes, once. The person sends this to the bot in a")
        print(f"private chat:  /pair {code}")
        return 0

    return asyncio.run(with_roost(settings, None, body))

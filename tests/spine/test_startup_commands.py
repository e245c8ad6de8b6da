"""Start-up: a command opens only what it uses, and does what it did before.

`roost pair` issues its code over the database, the audit chain and the tenant's
folders, without building a roost (`build()`): it imports neither the composition
root nor the sandbox, and still does a start's pairing step (bindings to tenants no
longer configured removed, audited by "config"). `roost send /help` runs no tool:
the sandbox runner (`forge.runner` and its chain) is made at its first use
(`bridge.app.lazy_runner`), not at build. Asserted on `sys.modules` and on what an
operator sees, never on time (bench/startup.py measures).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.spine.import_probe import imported_by
from tests.spine.test_terminal_startup import ROOT, environment

SANDBOX = ("forge.runner", "forge.helper_process", "forge.helper_pool", "forge.lint")


def test_pair_builds_no_roost(home: Path) -> None:
    code, out, modules = imported_by(["pair", "local"], environment(home))
    assert code == 0 and out.startswith("Pairing code for tenant local: ")
    assert [m for m in (*ROOT, *SANDBOX, "bridge.grading.judge") if m in modules] == []
    assert (home / "tenants" / "local").is_dir()


def test_send_help_makes_no_sandbox_runner(home: Path) -> None:
    code, out, modules = imported_by(["send", "/help"], environment(home))
    assert code == 0 and "/help all" in out
    assert [m for m in SANDBOX if m in modules] == []


def events(home: Path) -> list[dict[str, object]]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_pair_removes_the_bindings_of_a_removed_tenant_as_a_start_does(home: Path) -> None:
    env = environment(home)
    code, _, _ = imported_by(["pair", "local"], env)
    assert code == 0
    db = sqlite3.connect(home / "roost.db")
    with db:
        db.execute(
            "INSERT INTO pairing_bindings (channel, identity, tenant, bound_at)"
            " VALUES ('telegram', '4242', 'gone', 1.0)"
        )
    db.close()
    code, out, _ = imported_by(["pair", "local"], env)
    assert code == 0 and out.startswith("Pairing code for tenant local: ")
    db = sqlite3.connect(home / "roost.db")
    try:
        assert db.execute("SELECT count(*) FROM pairing_bindings").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM pairing_codes").fetchone() == (2,)
    finally:
        db.close()
    seen = [(e["event"], e["tenant"], e["details"]) for e in events(home)]
    gone = {"channel": "telegram", "identity": "4242", "by": "config"}
    revoked = ("pairing.revoked", "gone", gone)
    issued = ("pairing.issued", "local", {"ttl_s": 3600})
    assert seen.count(issued) == 2 and revoked in seen
    assert seen.index(revoked) < len(seen) - 1 and seen[-1] == issued  # removed, then issued

"""Start-up: a command opens only what it uses, and does what it did before.

`roost pair` issues its code over the database, the audit chain and the tenant's
folders, without building a roost (`build()`): it imports neither the composition
root nor the sandbox, and still does a start's pairing step (bindings to tenants this
configuration lacks named in a WARNING, never removed). `roost send /help` runs no tool:
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


def test_pair_keeps_the_bindings_of_an_unconfigured_tenant_and_says_so(home: Path) -> None:
    """As any start: a binding to a tenant this configuration lacks is named, never
    removed (atk39 #1: a command run with another configuration unpaired everyone)."""
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
        assert db.execute("SELECT tenant FROM pairing_bindings").fetchall() == [("gone",)]
        assert db.execute("SELECT count(*) FROM pairing_codes").fetchone() == (2,)
    finally:
        db.close()
    seen = [(e["event"], e["tenant"], e["details"]) for e in events(home)]
    issued = ("pairing.issued", "local", {"ttl_s": 3600})
    assert seen.count(issued) == 2 and not [s for s in seen if s[0] == "pairing.revoked"]

"""`roost backup` of a home that instances share: every instance's audit chain is copied
under its own writer lock, complete records only, so each copy verifies."""

from __future__ import annotations

from pathlib import Path

from bridge.app.backup import backup
from bridge.audit.chain import AuditChain
from bridge.audit.chains import chain_file
from bridge.audit.store import head_path
from bridge.audit.verify import verify
from tests.audit.audit_helpers import fake_clock


async def test_each_instance_chain_is_copied_whole_and_verifies(tmp_path: Path) -> None:
    home, dest = tmp_path / "home", tmp_path / "backup"
    (home / "tenants").mkdir(parents=True)
    audit = home / "audit"
    for name, n in (("eu-1", 3), ("eu-2", 5)):
        async with AuditChain(chain_file(audit, name), None, fake_clock()) as chain:
            for i in range(n):
                await chain.emit("message.received", "alice", {"chars": i})
    torn = chain_file(audit, "eu-2")
    with torn.open("ab") as out:  # a writer of eu-2 half way through a line
        out.write(b'{"seq": 6, "ev')
    result = backup(home, dest)
    for name, n in (("eu-1", 3), ("eu-2", 5)):
        copy = chain_file(dest / "audit", name)
        checked = verify(copy)
        assert checked.ok and checked.records == n, (name, checked)
        assert head_path(copy).exists()
    assert result.audit_seq == 3 + 5

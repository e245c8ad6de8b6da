"""`roost export` hands a person their data; `roost forget` erases it (audit records stay).

Real turns through `roost send` fill the conversation, memory and audit
chain; the remaining tables with a `tenant` column get a row each, so that
every one of them is exported and then emptied. Another tenant is untouched.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.app.instance import hold
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, run

# values that satisfy the CHECK constraints of the tables that have them
VALID = {("jobs", "kind"): "reminder", ("jobs", "state"): "active", ("outbox", "state"): "queued"}
FILLER: dict[str, object] = {"INTEGER": 1, "REAL": 1.0}  # TEXT: x-<tenant>


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def tables_with_tenant(db: sqlite3.Connection) -> list[str]:
    """Every store's table with a tenant column (not the storage engine's `storage_*`)."""
    names = [
        r[0]
        for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not str(r[0]).startswith("storage_")
    ]
    return [
        n for n in names if any(c[1] == "tenant" for c in db.execute(f"PRAGMA table_info({n})"))
    ]


def fill_missing_rows(db_path: Path, tenant: str) -> list[str]:
    """Give `tenant` a row in every table with a tenant column that has none yet."""
    db = sqlite3.connect(db_path)
    tables = tables_with_tenant(db)
    for table in tables:
        if db.execute(f"SELECT 1 FROM {table} WHERE tenant = ?", (tenant,)).fetchone():
            continue
        info = db.execute(f"PRAGMA table_info({table})").fetchall()
        rowid = sum(c[5] > 0 for c in info) == 1  # an INTEGER `id` alone in the key: the rowid
        cols = [c for c in info if not (c[1] == "id" and c[2] == "INTEGER" and rowid)]
        values = [
            tenant
            if c[1] == "tenant"
            else VALID.get((table, c[1]), FILLER.get(c[2], f"x-{tenant}"))
            for c in cols
        ]
        marks = ",".join("?" * len(cols))
        db.execute(f"INSERT INTO {table} ({','.join(c[1] for c in cols)}) VALUES ({marks})", values)
    db.commit()
    db.close()
    return tables


def rows_of(db_path: Path, tenant: str) -> dict[str, int]:
    db = sqlite3.connect(db_path)
    counts = {
        t: db.execute(f"SELECT count(*) FROM {t} WHERE tenant = ?", (tenant,)).fetchone()[0]
        for t in tables_with_tenant(db)
    }
    db.close()
    return counts


def audit_lines(home: Path, tenant: str) -> list[str]:
    lines = (home / "audit" / "chain.jsonl").read_text().splitlines()
    return [line for line in lines if json.loads(line).get("tenant") == tenant]


async def setup_two_people(home: Path, env: dict[str, str]) -> None:
    for tenant, words in (("bob", "hello from bob about plums"), ("alice", "hi from alice")):
        assert (await run(["send", "--tenant", tenant, words], env))[0] == 0
        code, out, _ = await run(["send", "--tenant", tenant, f"/remember {tenant} likes tea"], env)
        assert code == 0 and "Remembered" in out
    root = home / "tenants" / "bob" / "global"
    (root / "STEERING.md").write_text("Answer in French.\n")
    (root / "forge" / "tools" / "me.greet.py").write_text("def run():\n    return 'hi'\n")
    (root / "forge" / "tools" / "me.greet.json").write_text('{"name": "me.greet"}\n')
    (root / "vault" / "github").write_text("ghp_" + "A1b2" * 9)
    for tenant in ("bob", "alice"):
        fill_missing_rows(home / "roost.db", tenant)


async def test_export_holds_everything_about_the_person(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    env = env_for(home, fake)
    await setup_two_people(home, env)
    out = tmp_path / "bob.zip"
    code, _, err = await run(["export", "--tenant", "bob", "--out", str(out)], env)
    assert code == 0, err
    assert out.stat().st_mode & 0o777 == 0o600
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        text = {n: zf.read(n).decode() for n in names}
    assert "README.txt" in names and "session_messages" in text["README.txt"]
    assert text["files/STEERING.md"] == "Answer in French.\n"
    assert "me.greet.py" in text["README.txt"] or "forge/tools" in text["README.txt"]
    assert {"files/forge/tools/me.greet.py", "files/forge/tools/me.greet.json"} <= names
    assert any(n.startswith("files/memory/") and "bob likes tea" in text[n] for n in names)
    assert "hello from bob about plums" in text["db/session_messages.jsonl"]
    assert "alice" not in "".join(text[n] for n in names if n.startswith("db/"))
    assert text["vault-names.txt"] == "github\n"
    assert "ghp_" not in "".join(text.values())  # secret values stay in the vault
    for table, count in rows_of(home / "roost.db", "bob").items():
        if table.startswith("recall_"):  # the recall index: history.jsonl (vectors derived)
            assert count > 0 and f"db/{table}.jsonl" not in names, table
            continue
        assert count > 0 and len(text[f"db/{table}.jsonl"].splitlines()) == count, table
    assert "hello from bob about plums" in text["history.jsonl"]
    exported = text["audit.jsonl"].splitlines()
    *before, record = audit_lines(home, "bob")  # the export's own record comes after the ZIP
    assert exported == before and len(exported) >= 4
    event = json.loads(record)
    assert event["event"] == "data.exported"
    files = sum(1 for n in names if n.startswith("files/"))
    rows = sum(len(text[n].splitlines()) for n in names if n.startswith("db/"))
    assert event["details"] == {
        "files": files,
        "rows": rows,
        "audit_records": len(exported),
        "bytes": out.stat().st_size,
        "by": "operator",
    }
    code, verified, _ = await run(["audit", "verify"], env)
    assert code == 0 and "intact" in verified
    code, _, err = await run(["export", "--tenant", "bob", "--out", str(out)], env)
    assert code == 2 and "exists" in err  # never over an existing file


async def test_forget_erases_the_person_but_not_the_audit_chain(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    await setup_two_people(home, env)
    before = audit_lines(home, "bob")
    alice = rows_of(home / "roost.db", "alice")

    code, _, err = await run(["forget", "--tenant", "bob"], env)
    assert code == 2 and "--yes" in err
    assert (home / "tenants" / "bob").is_dir()
    assert all(rows_of(home / "roost.db", "bob").values())

    daemon = hold(home)  # as a running `roost serve` holds it
    try:
        code, _, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    finally:
        daemon.release()
    assert code == 1 and f"a roost serve (pid {os.getpid()}) is running" in err
    assert (home / "tenants" / "bob").is_dir() and all(rows_of(home / "roost.db", "bob").values())

    code, out, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0, err
    assert not (home / "tenants" / "bob").exists()  # memory, tools, steering, vault
    counts = rows_of(home / "roost.db", "bob")
    assert {"sessions", "session_messages", "style_bullets", "jobs", "outbox"} <= set(counts)
    assert set(counts.values()) == {0}
    assert rows_of(home / "roost.db", "alice") == alice and all(alice.values())
    assert (home / "tenants" / "alice" / "global").is_dir()

    code, out, _ = await run(["audit", "verify"], env)
    assert code == 0 and "intact" in out
    *kept, last = audit_lines(home, "bob")
    assert kept == before
    gone = json.loads(last)
    assert gone["event"] == "data.forgotten" and gone["details"]["by"] == "operator"
    assert (
        gone["details"]["files"] >= 5
        and gone["details"]["rows"] >= sum(1 for _ in counts)
        and gone["details"]["bytes"] > 0
    )
    assert "plums" not in (home / "audit" / "chain.jsonl").read_text()  # no content in it

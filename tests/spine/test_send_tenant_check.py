"""`roost send --tenant T` and `roost import --tenant T` refuse a tenant roost does not know.

A typo once became a tenant: `send --tenant typo` answered as a brand-new
tenant (its folders made, so every later command took it as real), `import
--tenant ghost` filed the history under nobody, `send --to web:default --tenant
nobody` queued a message no page could show. Known, as for `prompt` and
`export`: the local tenant, a configured `[tenants.X]`, or one with files in
the home (a tenant that left the config, or one an older roost made this way:
its scripts keep working). Through the real CLI processes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]  # the fixture, imported for the tests below

KNOWN = "(known: alice, bob, local)"


def tenants(home: Path) -> set[str]:
    root = home / "tenants"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def outbox_rows(home: Path) -> int:
    if not (home / "roost.db").exists():
        return 0
    with sqlite3.connect(home / "roost.db") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        return (
            conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] if "outbox" in tables else 0
        )


async def test_send_to_an_unknown_tenant_is_refused_and_makes_nothing(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    for argv in (
        ["send", "--tenant", "typo", "/whoami"],
        ["send", "--tenant", "typo", "--offline", "hi"],
        ["send", "--tenant", "nobody", "--to", "web:default", "for nobody"],
    ):
        code, out, err = await run(argv, env)
        assert (code, out) == (2, ""), (argv, err)
        assert err.startswith("roost send: there is no tenant "), err
        assert KNOWN in err and "[tenants." in err and "Traceback" not in err
    assert not tenants(home) & {"typo", "nobody"}
    assert outbox_rows(home) == 0
    assert fake.requests == []  # no turn was run for the typo


async def test_import_into_an_unknown_tenant_is_refused(
    home: Path, fake: FakeOpenAI, tmp_path: Path
) -> None:
    history = tmp_path / "h.jsonl"
    line = {"conversation": "c", "id": "1", "role": "user", "name": "x", "text": "hi", "time": 1}
    history.write_text(json.dumps(line) + "\n")
    code, out, err = await run(["import", "--tenant", "ghost", str(history)], env_for(home, fake))
    assert (code, out) == (2, "")
    assert err.startswith("roost import: there is no tenant 'ghost'") and KNOWN in err, err
    assert "ghost" not in tenants(home)


async def test_known_tenants_still_work(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    code, out, _ = await run(["send", "--tenant", "alice", "hello"], env)  # the README's example
    assert (code, out) == (0, "echo: hello\n")
    code, out, _ = await run(["send", "--tenant", "local", "/whoami"], env)
    assert code == 0 and "Tenant: local" in out
    (home / "tenants" / "carol" / "global").mkdir(parents=True)  # left the config, files stay
    code, out, _ = await run(["send", "--tenant", "carol", "/whoami"], env)
    assert code == 0 and "Tenant: carol" in out
    code, out, _ = await run(["send", "--tenant", "bob", "--to", "web:default", "hi bob"], env)
    assert code == 0 and "queued" in out

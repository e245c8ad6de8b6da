"""One rule for vault names and a tool's SECRETS names (README: `GITHUB_TOKEN`).

`roost vault set alice GITHUB_TOKEN` (the real CLI, value on stdin), then a
tool declaring `SECRETS = ["GITHUB_TOKEN"]` is accepted, saved and called with
that value; a tool declaring `github_token` gets the same secret (names are
case-insensitive). Both sides refuse the same malformed names.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bridge.app.build import Roost, build
from bridge.core.config import Settings
from bridge.loadout import vault
from bridge.types.audit_sink import MemoryAudit
from bridge.types.tenant_dirs import TenantDirs
from forge.lint import lint
from tests.conftest import Clock, ScriptedBackend, web_msg
from tests.consent import keep
from tests.waits import HANG_S

VALUE = "ghp_4Vq9ZrT2mWx7Lk3Bn8Cy1Pd6Hs5Jf0Ga9Ue2"


def tool(declared: str, asked: str) -> str:
    return (
        "import hashlib\n\n"
        f"SECRETS = [{declared!r}]\n\n\n"
        "def run() -> str:\n"
        '    """Fingerprint the GitHub token."""\n'
        f"    return hashlib.sha256(str(secret({asked!r})).encode()).hexdigest()\n"
    )


def vault_set(home: Path, tenant: str, name: str, value: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    # the tenant is the local one, as in the roost the test builds (`vault set` takes a
    # configured tenant only)
    env.update(ROOST_HOME=str(home), ROOST_CONFIG=os.environ["ROOST_CONFIG"])
    env.update(ROOST_LOCAL_TENANT=tenant)
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "vault", "set", tenant, name],
        input=value + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


@asynccontextmanager
async def written(
    settings: Settings, clock: Clock, name: str, description: str, source: str
) -> AsyncIterator[tuple[Roost, ScriptedBackend]]:
    """Alice's roost after its model wrote the tool `name` (a draft, not saved yet)."""
    backend = ScriptedBackend()
    roost = await build(
        settings.model_copy(update={"local_tenant": "alice"}),
        backend=backend,
        audit=MemoryAudit(),
        clock=clock,
    )
    try:
        create = {"name": name, "description": description, "source": source}
        backend.steps += [[("forge_create", json.dumps(create))], "made"]
        await roost.core.handle(web_msg("make it", 1))
        yield roost, backend
    finally:
        await roost.aclose()


@pytest.mark.parametrize(
    ("declared", "asked"),
    [
        ("GITHUB_TOKEN", "GITHUB_TOKEN"),
        ("github_token", "github_token"),
        ("github_token", "GITHUB_TOKEN"),
        ("GITHUB_TOKEN", "Github_Token"),
    ],
)
async def test_the_readme_example_works_end_to_end(
    settings: Settings, clock: Clock, home: Path, declared: str, asked: str
) -> None:
    done = vault_set(home, "alice", "GITHUB_TOKEN", VALUE)
    assert done.returncode == 0, done.stderr
    assert VALUE not in done.stdout + done.stderr
    source = tool(declared, asked)
    async with written(settings, clock, "gh_print", "fingerprint", source) as (roost, backend):
        created = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
        assert created.startswith("Created gh_print"), created
        saved = await keep(lambda t: roost.core.handle(web_msg(t, 2)), "gh_print")
        assert saved.text.startswith("Saved me.gh_print"), saved.text
        backend.steps += [[("me__gh_print", "{}")], "done"]
        await roost.core.handle(web_msg("fingerprint my token", 3))
        result = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
        # The tool holds a handle under the declared name, never the value.
        handles = {f"[vault:{n}]" for n in (declared, asked, "GITHUB_TOKEN")}
        assert json.loads(result) in {hashlib.sha256(h.encode()).hexdigest() for h in handles}
        used = [e[2]["name"] for e in roost.audit.events if e[0] == "secret.used"]
        assert used == ["GITHUB_TOKEN"]
        assert "GITHUB_TOKEN" in backend.requests[-1].system  # block 4 lists the name


def test_vault_and_secrets_share_one_rule(tmp_path: Path) -> None:
    for good in ("GITHUB_TOKEN", "github_token", "Api_Key2", "x"):
        assert vault.check_name(good) == good
        assert not [f for f in lint(tool(good, good)) if f.code == "F046"]
    for bad in ("1TOKEN", "GITHUB-TOKEN", "_private", "a" * 65, "tok en", "ŧoken"):
        with pytest.raises(vault.VaultError):
            vault.check_name(bad)
        assert [f for f in lint(tool(bad, "x")) if f.code == "F046"], bad


def test_names_differing_only_in_case_are_one_secret(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "alice")
    vault.set_value(dirs, "github_token", "first-value")
    vault.set_value(dirs, "GITHUB_TOKEN", "second-value")
    assert vault.names(dirs) == ("GITHUB_TOKEN",)
    assert sorted(os.listdir(dirs.vault)) == ["GITHUB_TOKEN"]
    assert vault.remove_value(dirs, "Github_Token")
    assert vault.names(dirs) == ()

"""`roost forget --tenant T` erases T's MCP files too: its bearer token and its servers' logs.

Through the real `roost` command line: bob's token (made by `roost mcp
--token`) stops being a file, and so does the log of an external MCP server
of his; alice's stay. The forget output names what went under `mcp/`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.models.conftest import write_config
from tests.spine.test_daemon import run


def env_of(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(ROOST_HOME=str(home), ROOST_CONFIG=os.environ["ROOST_CONFIG"])
    return env


async def test_forget_deletes_the_tenants_mcp_token_and_logs(home: Path, tmp_path: Path) -> None:
    write_config("[tenants.alice]\ntelegram_ids = [111]\n[tenants.bob]\ntelegram_ids = [222]\n")
    env = env_of(home)
    for tenant in ("alice", "bob"):
        code, out, err = await run(["mcp", "--tenant", tenant, "--token"], env)
        assert code == 0 and out.startswith("roost-mcp-"), err
    folder = home / "mcp"
    (folder / "bob.github.log").write_text("server stderr with bob's data\n")
    (folder / "alice.github.log").write_text("alice's\n")
    bob_token = (folder / "bob.token").read_text().strip()

    code, out, err = await run(["forget", "--tenant", "bob", "--yes"], env)
    assert code == 0, err
    assert "(among them mcp/bob.token, mcp/bob.github.log)" in out
    assert not (folder / "bob.token").exists() and not (folder / "bob.github.log").exists()
    assert (folder / "alice.token").exists() and (folder / "alice.github.log").exists()

    # a token asked for again is a new one: the forgotten one never comes back
    code, out, _ = await run(["mcp", "--tenant", "bob", "--token"], env)
    assert code == 0 and out.strip() != bob_token

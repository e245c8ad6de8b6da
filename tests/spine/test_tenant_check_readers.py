"""`roost recall`, `jobs`, `style list-live` and `forget` refuse an unknown `--tenant`.

A typo answered as an empty tenant: `roost jobs --tenant typo` said "no
jobs", `roost style list-live --tenant typo` "typo: no live bullets", `roost
recall --tenant typo` "nothing indexed yet"; the operator never learnt the
name was wrong. Now each exits 2 naming the known tenants, as `roost send`
does (bridge/cli/tenant_check.py); a known tenant still gets its answer.
Through the real CLI processes.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run
from tests.spine.test_send_tenant_check import KNOWN, tenants

__all__ = ["fake"]  # the fixture, imported for the tests below

READERS = {
    "recall": ["recall", "--tenant", "typo", "dentist"],
    "jobs": ["jobs", "--tenant", "typo"],
    "style list-live": ["style", "list-live", "--tenant", "typo"],
    "forget": ["forget", "--tenant", "typo"],
}


async def test_an_unknown_tenant_is_refused_naming_the_known_ones(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    code, _, err = await run(["send", "--tenant", "alice", "/whoami"], env)  # makes roost.db
    assert code == 0, err
    for command, argv in READERS.items():
        code, out, err = await run(argv, env)
        assert (code, out) == (2, ""), (argv, err)
        assert err.startswith(f"roost {command}: there is no tenant 'typo' "), err
        assert KNOWN in err and "Traceback" not in err
    assert "typo" not in tenants(home)


async def test_known_tenants_still_get_their_answer(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    code, _, err = await run(["send", "--tenant", "alice", "hello dentist"], env)
    assert code == 0, err
    code, out, err = await run(["jobs", "--tenant", "alice"], env)
    assert (code, out) == (0, "no jobs\n"), err
    code, out, err = await run(["style", "list-live", "--tenant", "bob"], env)
    assert (code, out) == (0, "bob: no live bullets\n"), err
    code, out, err = await run(["recall", "--tenant", "alice", "dentist"], env)
    assert code == 0 and "hello dentist" in out, err
    code, _, err = await run(["recall", "--tenant", "bob", "dentist"], env)
    assert code == 1 and "roost recall: tenant bob has nothing indexed yet" in err

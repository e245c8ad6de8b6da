"""The adversarial suite of issue 9: two tenants under concurrent load, where bob's
tools try every route we know to read alice's secrets (passed to alice's calls)
and alice's tool source and constants while alice's calls are in flight.

Two attackers:
- in the tool language (all layers on): the str-like format routes that walked
  `__traceback__.tb_frame.f_back...f_locals` up into the helper;
- a *total break* of the tool language (lint and RestrictedPython off, and
  Landlock off so the tool can read /proc/self/mem): bob's tool scans every
  writable page of its own process for alice's markers. What it finds is all a
  child holds; it must find its own secret (the scan works) and nothing of alice's.

Markers are random per run (`zq-alice-<16 hex>`); bob's tool only knows the pattern.
"""

from __future__ import annotations

import asyncio
import secrets as random_tokens
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.layers import Layers
from forge.runner import RunResult, SandboxRunner
from tests.waits import HANG_S

pytestmark = pytest.mark.asyncio(loop_scope="module")
ROUNDS = 6

ALICE_TOOL = '''
SECRETS = ["api_token"]
NOTE = "zq-alice-{const}"


def run(n: int) -> int:
    """Alice's tool: a constant in its code, a secret in its call, some work."""
    try:
        token = secret("api_token")
    except NameError:  # plain Python (the broken-language runner): the job still holds it
        token = ""
    total = 0
    for i in range(n):
        total += i % 7
    return total + len(str(token)) + len(NOTE)
'''

# A total break of the tool language: plain Python in the child. It scans its
# own memory, and its zygote's and its helper's when the kernel lets it (a
# break of the process confinement too: /proc/<pid>/mem of a same-user process).
BOB_MEMORY_SCAN = '''
import os
import re
SECRETS = ["api_token"]


def scan(pid, pat, found):
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        return False
    with mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            pos = lo
            while pos < hi:
                n = min(1 << 20, hi - pos)
                try:
                    mem.seek(pos)
                    data = mem.read(n + 32)
                except OSError:
                    break
                found.update(m.decode() for m in pat.findall(data))
                pos += n
    return True


def run():
    """Scan every writable page of this process (and its parents') for markers."""
    pat = re.compile(rb"zq-(?:alice|bob)-[0-9a-f]{16}")
    found = set()
    zygote = os.getppid()
    with open(f"/proc/{zygote}/stat") as f:
        helper = int(f.read().rsplit(")", 1)[1].split()[1])
    for pid in ("self", zygote, helper):
        scan(pid, pat, found)
    return sorted(found)
'''

# The tool language's known routes out (all must be closed now).
BOB_FORMAT_WALK = '''
import re
from collections import UserString
SECRETS = ["api_token"]


def run():
    """Walk the frames above run() through every format route and grep the text."""
    token = secret("api_token")
    try:
        1 / 0
    except Exception as e:
        err = e
    texts = []
    tails = [".f_locals}", ".f_locals[self].cache}", ".f_locals[self].inbuf}",
             ".f_locals[chunk]}", ".f_locals[data]}", ".f_locals[req]}", ".f_globals}"]
    for depth in range(12):
        for tail in tails:
            field = "{0.__traceback__.tb_frame" + ".f_back" * depth + tail
            for attempt in (
                lambda: UserString(field).format(err),
                lambda: UserString(field.replace("{0", "{e")).format_map({"e": err}),
                lambda: field.format(err),
            ):
                try:
                    texts.append(str(attempt()))
                except Exception as exc:
                    texts.append(str(exc))
    found = set(re.findall(r"zq-(?:alice|bob)-[0-9a-f]{16}", " ".join(texts)))
    return sorted(found)
'''


def _marker(who: str) -> str:
    return f"zq-{who}-{random_tokens.token_hex(8)}"


async def _runner(layers: Layers) -> SandboxRunner:
    r = SandboxRunner(default_timeout_s=HANG_S, layers_for_tests=layers)
    await r.start()
    return r


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def broken_language() -> AsyncIterator[SandboxRunner]:
    r = await _runner(Layers(lint=False, restricted=False, landlock=False))
    yield r
    await r.aclose()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def production() -> AsyncIterator[SandboxRunner]:
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    yield r
    await r.aclose()


async def _contest(runner: SandboxRunner, bob_tool: str, tmp_path: Path) -> None:
    alice_ws, bob_ws = tmp_path / "alice" / "workspace", tmp_path / "bob" / "workspace"
    alice_ws.mkdir(parents=True)
    bob_ws.mkdir(parents=True)
    seen_alice: set[str] = set()
    for _ in range(ROUNDS):
        alice_src = ALICE_TOOL.format(const=random_tokens.token_hex(8))
        seen_alice.add("zq-alice-" + alice_src.split('"zq-alice-')[1][:16])
        alice_secrets = [_marker("alice") for _ in range(2)]
        seen_alice.update(alice_secrets)
        bob_secret = _marker("bob")
        bob_mine = _marker("bob")  # in bob's own code: what the scan must find
        bob_src = bob_tool.replace(
            'SECRETS = ["api_token"]', f'SECRETS = ["api_token"]\nMINE = "{bob_mine}"'
        )
        calls = [
            runner.run(alice_src, {"n": 300_000}, alice_ws, {"api_token": s}) for s in alice_secrets
        ]
        calls.insert(1, runner.run(bob_src, {}, bob_ws, {"api_token": bob_secret}))
        results: list[RunResult] = await asyncio.gather(*calls)
        for res in results:
            assert res.ok, res
        bob = results[1]
        leaked = set(bob.result) & seen_alice
        assert not leaked, f"bob read alice's data: {sorted(leaked)}"
        assert set(bob.result) <= {bob_mine}, bob.result
        # Vault values never enter the sandbox (the broker keeps them): not even
        # the call's own secret is in any page of the child, zygote or helper.
        assert bob_secret not in bob.result
        if bob_tool is BOB_MEMORY_SCAN:
            assert bob_mine in bob.result, "the scan must see the call's own code"
    assert runner.helper_pid(alice_ws) != runner.helper_pid(bob_ws)
    assert runner.zygote_pid(alice_ws) != runner.zygote_pid(bob_ws)


async def test_total_break_of_the_language_reads_only_own_call(
    broken_language: SandboxRunner, tmp_path: Path
) -> None:
    await _contest(broken_language, BOB_MEMORY_SCAN, tmp_path)


async def test_format_routes_under_load_read_nothing_of_alice(
    production: SandboxRunner, tmp_path: Path
) -> None:
    await _contest(production, BOB_FORMAT_WALK, tmp_path)

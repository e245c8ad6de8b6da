"""One audit chain per instance of a shared home: names, verify, tail, doctor, export, forget.

Instances that share a home each append to `audit/chain-NAME.jsonl`; every
reader takes every chain (`bridge.audit.chains`). Built with real
`AuditChain` writers (two at once on one directory), read through the real
`roost audit` parser, the doctor's check and the export.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_helpers import KEY, run

from bridge.app.channels_up import PLATFORMS
from bridge.app.database import open_database
from bridge.app.export import write_export
from bridge.app.home import chain_instance, chain_path, chain_paths, open_chain
from bridge.audit import AuditChain
from bridge.audit.chains import chain_file, check_instance, instance_of
from bridge.cli.doctor import check_audit
from bridge.core.config import Settings


def clock(start: float, step: float) -> Callable[[], float]:
    ticks = itertools.count()
    return lambda: start + next(ticks) * step


async def write(path: Path, n: int, tick: Callable[[], float], tenant: str = "alice") -> None:
    chain = AuditChain(path, KEY, tick)
    async with chain:
        for i in range(n):
            await chain.emit("tool.called", tenant, {"name": f"me.t{i}", "ms": i, "outcome": "ok"})


@pytest.fixture
async def home(tmp_path: Path) -> Path:
    """A home two instances wrote at once (a's records at even quarter-seconds, b's
    between them), beside the single chain of the time before the cluster."""
    home = tmp_path / "home"
    await write(chain_path(home), 3, clock(1_700_000_000.0, 1.0), "carol")
    await asyncio.gather(
        write(chain_path(home, "a"), 5, clock(1_800_000_000.0, 0.5)),
        write(chain_path(home, "b"), 4, clock(1_800_000_000.25, 0.5), "bob"),
    )
    return home


@pytest.mark.parametrize("bad", ["", "-a", ".a", "a/b", "..", "a b", "a" * 64, "é", "a\n"])
def test_instance_names_that_cannot_name_a_file_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="instance name"):
        check_instance(bad)


def test_chain_files_are_named_by_instance(tmp_path: Path) -> None:
    assert chain_file(tmp_path) == tmp_path / "chain.jsonl"
    assert chain_file(tmp_path, "eu-1") == tmp_path / "chain-eu-1.jsonl"
    assert chain_file(tmp_path, "Node.2") == tmp_path / "chain-Node.2.jsonl"
    assert instance_of(tmp_path / "chain-Node.2.jsonl") == "Node.2"
    assert instance_of(tmp_path / "chain-eu-1.jsonl") == "eu-1"
    assert instance_of(tmp_path / "chain.jsonl") is None
    assert chain_paths(tmp_path / "nowhere") == []


async def test_each_instance_writes_its_own_chain_with_head_and_lock(home: Path) -> None:
    names = sorted(p.name for p in (home / "audit").iterdir())
    for stem in ("chain", "chain-a", "chain-b"):
        assert {f"{stem}.jsonl", f"{stem}.head", f"{stem}.lock"} <= set(names)
    assert chain_paths(home) == [
        home / "audit" / n for n in ("chain.jsonl", "chain-a.jsonl", "chain-b.jsonl")
    ]
    # each chain starts its own sequence: they are separate hash chains
    firsts = [json.loads(p.read_text().splitlines()[0])["seq"] for p in chain_paths(home)]
    assert firsts == [1, 1, 1]


async def test_verify_checks_every_chain_and_names_the_broken_one(
    home: Path, key_file: Path
) -> None:
    code, out, _ = run(["audit", "verify"], home, key_file)
    assert code == 0, out
    assert out.splitlines() == [
        "chain.jsonl: audit chain intact: 3 records (with HMAC key)",
        "instance a (chain-a.jsonl): audit chain intact: 5 records (with HMAC key)",
        "instance b (chain-b.jsonl): audit chain intact: 4 records (with HMAC key)",
    ]
    b = chain_path(home, "b")
    lines = b.read_bytes().splitlines(keepends=True)
    b.write_bytes(b"".join(lines[:1] + lines[2:]))  # record 2 of b removed
    code, out, _ = run(["audit", "verify"], home, key_file)
    assert code == 1
    assert "instance a (chain-a.jsonl): audit chain intact" in out
    assert "instance b (chain-b.jsonl): audit chain violation: sequence_gap at record 3" in out


async def test_a_record_moved_between_chains_breaks_both(home: Path, key_file: Path) -> None:
    a, b = chain_path(home, "a"), chain_path(home, "b")
    a_lines = a.read_bytes().splitlines(keepends=True)
    b_lines = b.read_bytes().splitlines(keepends=True)
    b.write_bytes(b"".join(b_lines[:2] + a_lines[2:3] + b_lines[3:]))
    code, out, _ = run(["audit", "verify"], home, key_file)
    assert code == 1
    assert "instance b (chain-b.jsonl): audit chain violation" in out


async def test_tail_interleaves_the_chains_by_time(home: Path, key_file: Path) -> None:
    code, out, _ = run(["audit", "tail", "-n", "4"], home, key_file)
    assert code == 0
    firsts = [line.split("\t")[0] for line in out.splitlines()]
    times = [line.split("\t")[1] for line in out.splitlines()]
    assert times == sorted(times)
    # the last four of nine interleaved records (a's at .0 and .5 s, b's at .25 and .75 s)
    assert firsts == ["b:3", "a:4", "b:4", "a:5"]
    code, out, _ = run(["audit", "tail", "-n", "2", "--json"], home, key_file)
    assert [json.loads(line)["instance"] for line in out.splitlines()] == ["b", "a"]
    code, out, _ = run(["audit", "tail", "--tenant", "carol"], home, key_file)
    assert [line.split("\t")[0] for line in out.splitlines()] == ["-:1", "-:2", "-:3"]


async def test_doctor_counts_every_chain_and_names_a_broken_one(home: Path, key_file: Path) -> None:
    settings = Settings(home=home, audit_hmac_key_file=key_file)
    check = check_audit(settings)
    assert (check.status, check.reason) == (
        "ok",
        "chain intact: 12 records in 3 chains (with HMAC key)",
    )
    a = chain_path(home, "a")
    a.write_bytes(a.read_bytes().replace(b'"ms":1,', b'"ms":9,'))
    check = check_audit(settings)
    assert check.status == "FAIL"
    assert check.reason.startswith("instance a (chain-a.jsonl): ")


async def test_export_holds_the_records_of_every_chain(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "alice.zip"
    (home / "tenants" / "alice").mkdir(parents=True)
    db = await open_database(tmp_path / "roost.db")  # the schema, no rows: not read here
    try:
        done = await write_export(home, db, "alice", out, "2026-12-02")
    finally:
        await db.aclose()
    assert done.audit == 5
    with zipfile.ZipFile(out) as zf:
        records = [json.loads(line) for line in zf.read("audit.jsonl").splitlines()]
    assert len(records) == 5  # a's five; b wrote about bob, the single chain about carol
    assert {r["tenant"] for r in records} == {"alice"}


async def test_an_instance_on_a_shared_database_appends_to_its_own_chain(tmp_path: Path) -> None:
    home = tmp_path / "home"
    alone = Settings(home=home)
    assert chain_instance(alone) is None  # SQLite: one process per home, one chain
    shared = Settings(
        home=home,
        database={"url": "postgresql://roost@db.internal/roost"},
        cluster={"instance": "eu-1"},
    )
    assert chain_instance(shared) == "eu-1"
    chain = await open_chain(shared, clock(1_800_000_000.0, 1.0), PLATFORMS)
    try:
        await chain.emit("tool.called", "alice", {"name": "me.t", "ms": 1, "outcome": "ok"})
    finally:
        await chain.aclose()
    assert [p.name for p in chain_paths(home)] == ["chain-eu-1.jsonl"]

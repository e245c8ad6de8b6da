"""`[database]` and `[cluster]`: the settings, the URL kept secret, PostgreSQL unreachable at
start (exit 78 naming database.url), and two real `roost serve` with one instance name."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.app.database import claim_cluster, postgres_url
from bridge.app.logging_setup import Redactor, secret_values
from bridge.core.config import ConfigError, load_settings
from bridge.core.config_sections import ClusterSettings
from bridge.storage.errors import LeaseHeld
from bridge.storage.leases import InstanceName, Leases
from bridge.storage.postgres import PostgresDatabase
from bridge.storage.schema import MIGRATIONS
from tests.waits import HANG_S, until

ROOST = [sys.executable, "-m", "bridge.cli.main"]
URL = "postgresql://roost:s3cr%2Ft-pw@db.example:5433/roost"


def test_defaults_sqlite_and_a_15_second_lease(home: Path) -> None:
    settings = load_settings()
    assert settings.database.url is None and postgres_url(settings.database) is None
    assert settings.cluster.instance is None and settings.cluster.lease_s == 15.0


def test_env_overrides_and_the_password_never_shown(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOST_DATABASE__URL", URL)
    monkeypatch.setenv("ROOST_CLUSTER__INSTANCE", "eu-1")
    monkeypatch.setenv("ROOST_CLUSTER__LEASE_S", "4")
    settings = load_settings()
    assert postgres_url(settings.database) == URL
    assert settings.cluster.instance == "eu-1" and settings.cluster.lease_s == 4
    assert "s3cr" not in repr(settings) and "s3cr" not in str(settings.database)
    line = Redactor(secret_values(settings)).redact(f"connect to {URL} failed: s3cr/t-pw")
    assert "s3cr" not in line, line


@pytest.mark.parametrize(
    ("env", "key", "reason"),
    [
        ({"ROOST_DATABASE__URL": "mysql://u:topsecret@h/db"}, "database.url", "postgresql://"),
        ({"ROOST_DATABASE__URL": "postgresql://u:topsecret@h:99999/db"}, "database.url", "valid"),
        (
            {"ROOST_DATABASE__URL": "postgresql://u:topsecret@h"},
            "database.url",
            "names no database",
        ),
        (
            {
                "ROOST_DATABASE__URL": "postgresql://u:topsecret@h/db",
                "ROOST_DATABASE__PASSWORD_FILE": "/x",
            },
            "database",
            "use one",
        ),
        ({"ROOST_CLUSTER__INSTANCE": "eu 1"}, "cluster.instance", "A-Z"),
        ({"ROOST_CLUSTER__LEASE_S": "0"}, "cluster.lease_s", "greater than or equal to 1"),
    ],
)
def test_bad_settings_name_the_key_and_show_no_password(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], key: str, reason: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = Redactor().redact(str(caught.value))  # as `roost` prints it
    assert f"  {key}:" in message and reason in message, message
    assert "topsecret" not in message


def test_the_password_file_fills_the_url(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "pw"
    secret.write_text("p@ss word/1\n")
    monkeypatch.setenv("ROOST_DATABASE__URL", "postgresql://roost@db.example/roost")
    monkeypatch.setenv("ROOST_DATABASE__PASSWORD_FILE", str(secret))
    settings = load_settings()
    assert (
        postgres_url(settings.database) == "postgresql://roost:p%40ss%20word%2F1@db.example/roost"
    )
    secret.unlink()
    with pytest.raises(ConfigError, match=r"database\.password_file: cannot read"):
        postgres_url(settings.database)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_env(home: Path, url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=os.environ["ROOST_CONFIG"],
        ROOST_WEB__PORT="0",
        ROOST_DATABASE__URL=url,
        ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
        ROOST_GRADING__JUDGE_DAILY_CAP="0",
        **extra,
    )
    return env


async def test_serve_with_postgresql_unreachable_exits_78_naming_the_setting(home: Path) -> None:
    port = _closed_port()
    env = serve_env(home, f"postgresql://roost:hunter2pw@127.0.0.1:{port}/roost")
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    assert proc.returncode == 78, err.decode()
    text = err.decode()
    assert (
        f"database.url: cannot reach PostgreSQL at postgresql://roost:***@127.0.0.1:{port}" in text
    )
    assert "hunter2pw" not in text and "Traceback" not in text


async def start(env: dict[str, str]) -> asyncio.subprocess.Process:
    """A `roost serve` that printed its ready line (an error if it exited instead)."""
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), HANG_S)
        if not raw:
            _, err = await proc.communicate()
            raise AssertionError(f"serve exited ({proc.returncode}): {err.decode()}")
        if raw.startswith(b"roost: model"):
            return proc


async def test_two_instances_with_one_name_the_second_refuses_until_the_first_is_dead(
    tmp_path: Path, home: Path, pg_url: str
) -> None:
    db = await PostgresDatabase.open(pg_url)
    leases = Leases(db)
    name = "instance:eu-1"
    one = serve_env(
        tmp_path / "one", pg_url, ROOST_CLUSTER__INSTANCE="eu-1", ROOST_CLUSTER__LEASE_S="6"
    )
    two = serve_env(
        tmp_path / "two", pg_url, ROOST_CLUSTER__INSTANCE="eu-1", ROOST_CLUSTER__LEASE_S="6"
    )
    first = await start(one)
    try:
        # held from before its ready line; a loop blocked longer than the lease (a loaded
        # machine) lets it lapse until the next renewal, which takes it again
        await until_async(lambda: has_holder(leases, name), "the first instance's lease")
        held = await leases.holder(name)
        assert held is not None
        renewed = [held.expires_ms]

        async def renewal_seen() -> bool:
            now = await leases.holder(name)
            return now is not None and now.owner == held.owner and now.expires_ms > renewed[0]

        await until_async(renewal_seen, "the first instance renewing its lease")
        proc = await asyncio.create_subprocess_exec(
            *ROOST, "serve", env=two, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(proc.communicate(), HANG_S)
        assert proc.returncode == 1
        assert "cluster.instance 'eu-1' is already in use by a running instance" in err.decode()

        first.kill()  # SIGKILL: no release, the lease runs out by itself
        await first.wait()

        async def free() -> bool:
            return await leases.holder(name) is None

        await until_async(free, "the dead instance's lease expiring")
        second = await start(two)
        await until_async(lambda: has_holder(leases, name), "the second instance's lease")
        taken = await leases.holder(name)
        assert taken is not None and taken.owner != held.owner
        second.send_signal(signal.SIGTERM)
        await asyncio.wait_for(second.communicate(), HANG_S)
        assert second.returncode == 0
        assert await leases.holder(name) is None  # released at a clean stop
    finally:
        if first.returncode is None:
            first.kill()
            await first.wait()
        await db.aclose()


async def has_holder(leases: Leases, name: str) -> bool:
    return await leases.holder(name) is not None


async def until_async(check: Any, what: str) -> None:
    results: list[bool] = [False]

    async def poll() -> None:
        while not await check():
            await asyncio.sleep(0.05)
        results[0] = True

    task = asyncio.create_task(poll())
    try:
        await until(lambda: results[0] or task.done(), what)
    finally:
        task.cancel()


async def test_claim_cluster_holds_the_name_on_postgresql_only(tmp_path: Path, pg_url: str) -> None:
    from bridge.storage.sqlite import SqliteDatabase

    lite = await SqliteDatabase.open(tmp_path / "roost.db")
    try:
        assert await claim_cluster(lite, ClusterSettings(instance="a")) is None  # the home lock
    finally:
        await lite.aclose()
    one, two = await PostgresDatabase.open(pg_url), await PostgresDatabase.open(pg_url)
    try:
        await one.migrate(MIGRATIONS)
        held = await claim_cluster(one, ClusterSettings(instance="a"))
        assert held is not None
        with pytest.raises(LeaseHeld):
            await claim_cluster(two, ClusterSettings(instance="a"))
        other = await claim_cluster(two, ClusterSettings(instance="b"))
        assert other is not None
        await held.release()
        again = await claim_cluster(two, ClusterSettings(instance="a"))
        assert again is not None
        for h in (other, again):
            await h.release()
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_name_taken_while_its_holder_was_away_is_reported_lost(db: Any) -> None:
    held = InstanceName(Leases(db), "eu-1", "process-a", 300)  # renewed every 100 ms
    await held.start()
    await db.execute("UPDATE storage_leases SET expires_ms = 0")  # as if it missed its renewals
    assert await Leases(db).acquire("instance:eu-1", "process-b", 60_000) is not None
    await asyncio.wait_for(held.lost.wait(), HANG_S)  # serve stops on it (serve.stop_when)
    await held.release()
    holder = await Leases(db).holder("instance:eu-1")
    assert holder is not None and holder.owner == "process-b"  # the release left b's lease


async def test_doctor_tells_the_postgresql_server_its_schema_and_instances(
    home: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bridge.cli.doctor import check_postgres

    assert await check_postgres(load_settings(), 5.0) == []  # SQLite: no line
    monkeypatch.setenv("ROOST_DATABASE__URL", pg_url)
    (got,) = await check_postgres(load_settings(), 5.0)
    assert (got.status, got.name) == ("warn", "postgresql")
    assert (
        got.reason
        == f"{pg_url}: schema version 0 of {len(MIGRATIONS)}; live instances: none "
        + ("(roost serve migrates it at start)")
    )
    db = await PostgresDatabase.open(pg_url)
    try:
        await db.migrate(MIGRATIONS)
        held = await claim_cluster(db, ClusterSettings(instance="eu-1"))
        assert held is not None
        (got,) = await check_postgres(load_settings(), 5.0)
        assert got.status == "ok" and got.reason.endswith("; live instances: eu-1")
        await held.release()
    finally:
        await db.aclose()
    monkeypatch.setenv(
        "ROOST_DATABASE__URL", f"postgresql://u:hunter2pw@127.0.0.1:{_closed_port()}/x"
    )
    (got,) = await check_postgres(load_settings(), 5.0)
    assert got.status == "FAIL" and "database.url: cannot reach PostgreSQL" in got.reason
    assert "hunter2pw" not in got.reason and "u:***@127.0.0.1" in got.reason

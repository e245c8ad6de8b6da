"""A keyed chain is continued only with its key, an unkeyed one only without one.

The service reads the HMAC key as a systemd credential; an operator's shell has
no `$CREDENTIALS_DIRECTORY`. Its `roost send` (or `pair`, ...) used to append
unkeyed records and rewrite the head without a MAC: `audit verify` then said
bad_mac and the keyed daemon refused to start. Now the command is refused with
one line (exit 78) and the chain and head keep every byte; the service goes on.
The other way round (a key configured for a chain written without one) is
refused the same way, saying what docs/audit.md says to do. Real `roost`
subprocesses throughout; `roost doctor` without the key warns that it is keyed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from audit_helpers import KEY

from tests.waits import HANG_S


def roost(
    home: Path, *argv: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    base.pop("CREDENTIALS_DIRECTORY", None)
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", *argv],
        env={**base, "ROOST_HOME": str(home), "ROOST_LLM__PROVIDER": "offline", **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )


@pytest.fixture
def service(tmp_path: Path) -> dict[str, str]:
    """The service's environment: the key as a systemd credential."""
    creds = tmp_path / "credentials"
    creds.mkdir(mode=0o700)
    (creds / "audit-hmac-key").write_bytes(KEY + b"\n")
    (tmp_path / "roost.toml").write_text("")
    return {"CREDENTIALS_DIRECTORY": str(creds), "ROOST_CONFIG": str(tmp_path / "roost.toml")}


def files(home: Path) -> tuple[bytes, bytes]:
    audit = home / "audit"
    return (audit / "chain.jsonl").read_bytes(), (audit / "chain.head").read_bytes()


@pytest.mark.parametrize("argv", [("send", "/help"), ("pair", "local")])
def test_a_command_without_the_key_leaves_a_keyed_chain_alone(
    tmp_path: Path, service: dict[str, str], argv: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    assert roost(home, "send", "/help", **service).returncode == 0  # the service's record
    before = files(home)
    operator = {"ROOST_CONFIG": service["ROOST_CONFIG"]}  # same config, no credential
    proc = roost(home, *argv, **operator)
    assert proc.returncode == 78, proc.stderr
    chain = home / "audit" / "chain.jsonl"
    assert proc.stderr.splitlines() == [
        f"roost: the audit chain {chain} is keyed (its records carry an HMAC) and this "
        "process has no key: set ROOST_AUDIT_HMAC_KEY_FILE to the service's key file (or "
        "run this as the service does, with its audit-hmac-key credential); nothing was "
        "added to it"
    ]
    assert files(home) == before  # not a byte added, the head not rewritten

    verified = roost(home, "audit", "verify", **service)
    assert (verified.returncode, verified.stdout) == (
        0,
        "audit chain intact: 1 record (with HMAC key)\n",
    )
    again = roost(home, "send", "/help", **service)  # the service goes on
    assert again.returncode == 0, again.stderr

    doctor = roost(home, "doctor", **operator)
    audit = next(line for line in doctor.stdout.splitlines() if line.split()[1] == "audit")
    assert audit.startswith("warn  audit     chain intact: 2 records, but it is keyed"), audit
    assert "ROOST_AUDIT_HMAC_KEY_FILE" in audit


def test_a_key_for_a_chain_written_without_one_is_refused(
    tmp_path: Path, service: dict[str, str]
) -> None:
    home = tmp_path / "home"
    operator = {"ROOST_CONFIG": service["ROOST_CONFIG"]}
    assert roost(home, "send", "/help", **operator).returncode == 0  # unkeyed chain
    before = files(home)
    key_file = tmp_path / "audit-hmac-key"
    key_file.write_bytes(KEY)
    proc = roost(home, "send", "/help", **operator, ROOST_AUDIT_HMAC_KEY_FILE=str(key_file))
    assert proc.returncode == 78
    (line,) = proc.stderr.splitlines()
    assert "was written without an HMAC key and one is configured" in line
    assert "move the chain and its .head file aside (keep them)" in line
    assert files(home) == before
    assert roost(home, "audit", "verify", **operator).returncode == 0


def test_commands_that_change_something_change_nothing_they_could_not_record(
    tmp_path: Path, service: dict[str, str]
) -> None:
    """`vault set`, `import`, `export`, `forget` and `access revoke` did their work and then
    failed to record it (exit 78 after the change): now they stop before it."""
    home = tmp_path / "home"
    assert roost(home, "send", "/help", **service).returncode == 0
    before = files(home)
    history = tmp_path / "in.jsonl"
    history.write_text('{"conversation": "c", "id": "1", "role": "user", "text": "otters"}\n')
    out, vault = tmp_path / "x.zip", home / "tenants/local/global/vault"
    checks = [
        (
            ("vault", "set", "local", "api_token"),
            lambda: not vault.exists() or not any(vault.iterdir()),
        ),
        (("import", "--tenant", "local", str(history)), lambda: True),  # recall, below
        (("export", "--tenant", "local", "--out", str(out)), lambda: not out.exists()),
        (("access", "revoke", "local"), lambda: True),
        (("forget", "--tenant", "local", "--yes"), lambda: (home / "tenants/local").is_dir()),
    ]
    for argv, unchanged in checks:
        done = roost(home, *argv, ROOST_CONFIG=service["ROOST_CONFIG"], stdin="s3cr3t-value-1\n")
        assert done.returncode == 78, (argv, done.stderr)
        assert "is keyed" in done.stderr and "Traceback" not in done.stderr, argv
        assert unchanged(), argv
    assert files(home) == before
    recall = roost(home, "recall", "--tenant", "local", "otters", **service)
    assert "nothing indexed yet" in recall.stderr  # nothing was imported

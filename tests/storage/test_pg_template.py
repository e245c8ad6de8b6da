"""The test PostgreSQL servers' template (tests/storage/pg_server.py): made once, then
copied by each server; a template the machine's cleaner thinned does not fail the
next server (that one runs initdb) and is made again for the one after."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage import pg_server
from tests.storage.pg_server import NoPostgres, PgServer, start_server


@pytest.fixture
def templates(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder of templates of this test's own (searchable by the server's user, as /tmp
    is), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="roost-pg-templates-", dir="/tmp"))
    os.chmod(where, 0o755)
    monkeypatch.setattr(pg_server, "TEMPLATES", where)
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _served(templates: Path) -> tuple[Path, bool]:
    """Start a server, ask it a question, remove it: (its template, whether it was
    `ready` once the server ran)."""
    try:
        server: PgServer = start_server()
    except NoPostgres as exc:
        pytest.skip(f"PostgreSQL not installed ({exc})")
    try:
        answer = server._run(
            str(server.bin / "psql"), "-h", "127.0.0.1", "-p", str(server.port), "-U",
            "postgres", "-Atc", "SELECT 40 + 2",
        )  # fmt: skip
        assert answer.stdout.strip() == "42"
    finally:
        server.remove()
    (home,) = templates.iterdir()
    return home, (home / "ready").exists()


def test_a_thinned_template_is_made_again_and_no_server_fails(templates: Path) -> None:
    home, ready = _served(templates)
    assert ready and (home / "data" / "global" / "pg_control").exists()
    (home / "data" / "global" / "pg_control").unlink()  # a cleaner took a file
    again, ready = _served(templates)  # this server ran initdb: the copy would not start
    assert again == home and not ready
    again, ready = _served(templates)  # the next one made the template again
    assert ready and (home / "data" / "global" / "pg_control").exists()

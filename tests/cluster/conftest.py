"""The session's PostgreSQL server and a database per test (tests/storage's fixtures)."""

from tests.storage.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]

"""Which asyncpg errors say the connection is gone (the turn is told the database is
away and the pool is renewed), and which are the statement's own."""

from __future__ import annotations

import asyncpg

from bridge.storage.postgres.health import is_loss


def test_a_connection_left_mid_operation_is_a_loss() -> None:
    # seen when the server went away under a turn (make test on a fresh clone)
    stuck = asyncpg.exceptions.InternalClientError(
        "cannot switch to state 11; another operation (2) is in progress"
    )
    assert is_loss(stuck)


def test_the_statements_own_errors_are_not_a_loss() -> None:
    assert not is_loss(asyncpg.exceptions.QueryCanceledError("canceling statement"))
    assert not is_loss(asyncpg.exceptions.InternalClientError("unexpected state"))
    assert not is_loss(asyncpg.exceptions.UniqueViolationError("duplicate key"))
    assert is_loss(ConnectionRefusedError(111, "refused"))

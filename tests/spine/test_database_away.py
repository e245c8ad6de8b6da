"""The database going away during the access check is a clear reply, not a crash.

The PostgreSQL backend turns a lost server into `DatabaseUnavailable` (tests/storage/
test_postgres.py); here the access check meets it, as the pairing store's read would,
and the person is told the message was not taken in. The next message, once the
database is back, is answered as usual, and nothing of the refused one was kept.
"""

from __future__ import annotations

import logging

import pytest

from bridge.app.build import Roost
from bridge.core.router import DATABASE_AWAY
from bridge.storage.errors import DatabaseUnavailable
from bridge.types.messages import Final, Inbound
from tests.conftest import ScriptedBackend, web_msg


async def test_an_unreachable_database_at_the_access_check_is_a_clear_reply(
    roost: Roost, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    admit = roost.core.access.admit
    away = True

    async def flaky(inbound: Inbound) -> str | Final:
        if away:
            raise DatabaseUnavailable(
                "the database is unreachable (reconnecting in the background)"
            )
        return await admit(inbound)

    monkeypatch.setattr(roost.core.access, "admit", flaky)
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    backend.steps.append("back again")
    with caplog.at_level(logging.WARNING):
        said = await roost.core.handle(web_msg("are you there?", 1))
    assert said == Final(DATABASE_AWAY, "error")
    assert backend.requests == []  # the model never saw the refused message
    assert any("database unreachable" in r.getMessage() for r in caplog.records)

    away = False
    said = await roost.core.handle(web_msg("and now?", 2))
    assert (said.kind, said.text) == ("answer", "back again")
    (request,) = backend.requests
    seen = " ".join(str(m.content) for m in request.messages)
    assert "and now?" in seen and "are you there?" not in seen

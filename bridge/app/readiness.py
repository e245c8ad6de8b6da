"""Whether this instance can serve now, for `GET /readyz` (a load balancer's check).

`database_ready(db)` asks the database one `SELECT 1`, bounded: None when it
answered, else a short fixed reason (never the error's text: the route needs
no token). PostgreSQL away or a pool that cannot connect -> "database
unreachable"; no answer within `timeout_s` -> "database not answering".
"""

from __future__ import annotations

import asyncio

from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database

TIMEOUT_S = 2.0


async def database_ready(db: Database, timeout_s: float = TIMEOUT_S) -> str | None:
    try:
        await asyncio.wait_for(db.fetch_value("SELECT 1"), timeout_s)
    except TimeoutError:
        return "database not answering"
    except (StorageError, OSError):
        return "database unreachable"
    return None

"""A tenant's indexed messages as import-format JSONL (for `roost export`).

Each line is one message as `roost import` reads it (`conversation`, `id`,
`role`, `name`, `text`, `time` ISO-8601 UTC) plus `source` (the channel, or
`import`), so an export can be imported again into another roost. A time no
date can show (stored before `roost import` refused them) is written as epoch
seconds, which the import refuses and names.
`HISTORY_PAGE` is the query over the index's tables (`bridge.recall.index`),
one tenant's messages in the order stored from after an id, a page at a time,
with its columns in `Row`'s order; the export streams its pages through
`history_line`, so an index of any size is never held in memory.
"""

from __future__ import annotations

import json

from bridge.recall.formats import utc
from bridge.recall.index import Row

HISTORY_PAGE = (  # (tenant, after this message id, at most n)
    "SELECT m.id, c.name, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text "
    "FROM recall_messages m JOIN recall_conversations c ON c.tenant = m.tenant AND c.id = m.conv "
    "WHERE m.tenant = ? AND m.id > ? ORDER BY m.id LIMIT ?"
)


def history_line(row: Row) -> bytes:
    """One message as a JSON line of the import format."""
    record = {
        "conversation": row.conversation,
        "id": row.msg_id,
        "role": row.role,
        "name": row.name,
        "text": row.text,
        "time": _time(row.at_ms),
        "source": row.source,
    }
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _time(at_ms: int) -> str | float:
    at = utc(at_ms)
    if at is None:
        return at_ms / 1000
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""A tenant's indexed messages as import-format JSONL (for `roost export`).

Each line is one message as `roost import` reads it (`conversation`, `id`,
`role`, `name`, `text`, `time` ISO-8601 UTC) plus `source` (the channel, or
`import`), so an export can be imported again into another roost.
`HISTORY_PAGE` is the query over the index's tables (`bridge.recall.index`),
one tenant's messages in the order stored from after an id, a page at a time,
with its columns in `Row`'s order; the export streams its pages through
`history_line`, so an index of any size is never held in memory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bridge.recall.index import Row

HISTORY_PAGE = (  # (tenant, after this message id, at most n)
    "SELECT m.id, c.name, m.msg_id, m.role, m.name, m.at_ms, m.source, m.text "
    "FROM recall_messages m JOIN recall_conversations c ON c.tenant = m.tenant AND c.id = m.conv "
    "WHERE m.tenant = ? AND m.id > ? ORDER BY m.id LIMIT ?"
)


def history_line(row: Row) -> bytes:
    """One message as a JSON line of the import format."""
    at = datetime.fromtimestamp(row.at_ms / 1000, UTC).isoformat(timespec="milliseconds")
    record = {
        "conversation": row.conversation,
        "id": row.msg_id,
        "role": row.role,
        "name": row.name,
        "text": row.text,
        "time": at.replace("+00:00", "Z"),
        "source": row.source,
    }
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")

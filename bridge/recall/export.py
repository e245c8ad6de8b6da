"""A tenant's indexed messages as import-format JSONL (for `roost export`).

Each line is one message as `roost import` reads it (`conversation`, `id`,
`role`, `name`, `text`, `time` ISO-8601 UTC) plus `source` (the channel, or
`import`), so an export can be imported again into another roost. Streamed
row by row: an index of any size is never held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

from bridge.recall.index import RecallIndex, index_path
from bridge.types.tenant_dirs import TenantDirs


def history_lines(dirs: TenantDirs) -> Iterator[bytes]:
    """One JSON line per message of the tenant's index (nothing when it has none)."""
    path = index_path(dirs)
    if not path.exists():
        return
    index = RecallIndex.open(path)
    try:
        for row in index.iter_all():
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
            yield (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
    finally:
        index.close()

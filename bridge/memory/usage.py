"""When each topic was last read or put into a prompt, and which topics are archived.

`memory/.usage.json` maps a topic's slug to `{"read": ms, "injected": ms}`
(written atomically, only when a value moves by more than an hour, so a
busy chat does not rewrite it every turn; `due` says whether a touch would
write, so a caller holding the file's data, kept by its stat key, skips
reading it). A topic is archived when neither
it was saved, read nor injected within `[memory] archive_after_days`: it
leaves the always-loaded index (MEMORY.md), stays readable (`memory_read`,
`/memory show`) and scored for injection, and comes back into the index the
moment it is used again. Nothing is deleted.
"""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

from bridge.core.atomic import write_text
from bridge.memory.files import Topic, slug

FILENAME = ".usage.json"
DAY_MS = 86_400_000
COARSE_MS = 3_600_000


def _path(memory_dir: Path) -> Path:
    return memory_dir / FILENAME


def load(memory_dir: Path) -> dict[str, dict[str, int]]:
    try:
        data = json.loads(_path(memory_dir).read_text("utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def due(data: dict[str, dict[str, int]], names: list[str], what: str, now: float) -> bool:
    """Whether `touch` would record anything for these topics over `data` (pure)."""
    now_ms = int(now * 1000)
    return any(now_ms - int(data.get(slug(name), {}).get(what, 0)) > COARSE_MS for name in names)


def touch(memory_dir: Path, names: list[str], what: str, now: float) -> bool:
    """Record `what` ("read" | "injected") for topics; True when the file changed."""
    data = load(memory_dir)
    now_ms, changed = int(now * 1000), False
    for name in names:
        entry = data.setdefault(slug(name), {})
        if now_ms - int(entry.get(what, 0)) > COARSE_MS:
            entry[what] = now_ms
            changed = True
    if changed and memory_dir.is_dir():
        write_text(_path(memory_dir), json.dumps(data, sort_keys=True))
    return changed


def _updated_ms(topic: Topic) -> int:
    stamp = topic.meta.get("updated") or topic.meta.get("created") or ""
    try:
        return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) * 1000
    except ValueError:
        return 0  # a hand-written topic without dates: its use decides


def last_used_ms(topic: Topic, usage: dict[str, dict[str, int]]) -> int:
    entry = usage.get(slug(topic.name), {})
    return max(_updated_ms(topic), int(entry.get("read", 0)), int(entry.get("injected", 0)))


def archived(topic: Topic, usage: dict[str, dict[str, int]], now: float, days: int) -> bool:
    """True when the topic was not saved, read or injected within `days`."""
    used = last_used_ms(topic, usage)
    return used > 0 and int(now * 1000) - used > days * DAY_MS

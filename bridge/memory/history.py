"""A topic's earlier versions: what a save replaced, with where it came from.

When a save replaces a topic about the same subject (the same name, or
another name with the same subject key: `MemoryStore.save`), the old
version is appended to `memory/.history/<slug>.jsonl` — name, type,
description, content, its provenance (created, updated, by, channel, chat,
msg_id) and when it was replaced — before the new one is written. The file
is append-only (one JSON object a line, 0600) and goes with the tenant's
files (export, backup, forget). `/memory show NAME --history` reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from bridge.memory.files import Topic, iso, slug

FOLDER = ".history"


@dataclass(frozen=True, slots=True)
class Version:
    topic: Topic
    replaced_at: str


def history_path(memory_dir: Path, name: str) -> Path:
    return memory_dir / FOLDER / f"{slug(name)}.jsonl"


def body_hash(topic: Topic) -> str:
    """sha256 prefix of a version's description and content (the audit's `hash`)."""
    text = f"{topic.description}\n{topic.content}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def append(memory_dir: Path, old: Topic, now: float, under: str = "") -> None:
    """Keep `old` as the newest earlier version of its topic, or of the topic named
    `under` when a save under another name superseded it (fsynced)."""
    path = history_path(memory_dir, under or old.name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    record = {
        "name": old.name,
        "type": old.type,
        "description": old.description,
        "content": old.content,
        "meta": dict(old.meta),
        "replaced_at": iso(now),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def versions(memory_dir: Path, name: str) -> list[Version]:
    """The earlier versions of a topic, oldest first (unreadable lines skipped)."""
    try:
        lines = history_path(memory_dir, name).read_text("utf-8").splitlines()
    except (FileNotFoundError, ValueError):
        return []
    out = []
    for line in lines:
        try:
            r = json.loads(line)
            topic = Topic(r["name"], r["type"], r["description"], r["content"], r["meta"])
            out.append(Version(topic, str(r["replaced_at"])))
        except (ValueError, KeyError, TypeError):
            continue
    return out

"""A saved tool's metadata file, `me.<name>.json`: one type, one parser, one writer.

    {"name", "description", "schema", "secrets", "sha256", "created_ms", "saved_from"}

Written last when a tool is saved (it is the commit marker; forge.library),
read by the library, the bridge's catalog and the prompt's tool block. Only
these fields exist: a file that lacks one (only `secrets` and `saved_from` may
be absent), or gives one the wrong type, is not a tool (`BadMeta`), so no
reader guesses at a shape nothing writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from forge.names import BadName, check_name

PREFIX, SUFFIX = "me.", ".json"


class BadMeta(ValueError):
    """Bytes that are not a saved tool's metadata."""


@dataclass(frozen=True, slots=True)
class ToolMeta:
    name: str  # bare, no `me.`
    description: str
    schema: dict[str, Any]
    secrets: tuple[str, ...]
    sha256: str
    created_ms: int
    saved_from: str = ""


def filename(name: str) -> str:
    """`x` -> `me.x.json` (name checked)."""
    return f"{PREFIX}{check_name(name)}{SUFFIX}"


def name_of(file: str) -> str | None:
    """The bare tool name of a metadata file name, or None for any other file."""
    if not (file.startswith(PREFIX) and file.endswith(SUFFIX)):
        return None
    try:
        return check_name(file[len(PREFIX) : -len(SUFFIX)])
    except BadName:
        return None


def dumps(meta: ToolMeta) -> bytes:
    record = {
        "name": meta.name,
        "description": meta.description,
        "schema": meta.schema,  # keeps parameter order
        "secrets": list(meta.secrets),
        "sha256": meta.sha256,
        "created_ms": meta.created_ms,
        "saved_from": meta.saved_from,
    }
    return json.dumps(record, indent=2).encode() + b"\n"


def _get(record: dict[str, Any], key: str, kind: type) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadMeta(f"{key!r} is missing or not a {kind.__name__}")
    return value


def loads(data: bytes | str, name: str | None = None) -> ToolMeta:
    """Parse metadata; `name`, when given (from the file name), must match the record."""
    try:
        record = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadMeta(f"not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise BadMeta("not a JSON object")
    secrets = record.get("secrets", [])  # optional, like saved_from: both came later
    if not isinstance(secrets, list) or not all(isinstance(s, str) for s in secrets):
        raise BadMeta("'secrets' must be a list of strings")
    try:
        bare = check_name(_get(record, "name", str))
    except BadName as exc:
        raise BadMeta(str(exc)) from None
    if name is not None and bare != name:
        raise BadMeta(f"the file of me.{name} describes me.{bare}")
    return ToolMeta(
        name=bare,
        description=_get(record, "description", str),
        schema=_get(record, "schema", dict),
        secrets=tuple(secrets),
        sha256=_get(record, "sha256", str),
        created_ms=_get(record, "created_ms", int),
        saved_from=_get(record, "saved_from", str) if "saved_from" in record else "",
    )

"""One placeholder style for every backend: `?` (positional) or `:name` (named).

A statement uses one kind: `?` with a sequence of values, or `:name` with a
mapping (a name may repeat). `translate` turns it into the backend's own
form — `?` for SQLite, `$1, $2, ...` for PostgreSQL — and the values into
one ordered tuple. Quoted strings ('...'), quoted identifiers ("..."),
dollar-quoted bodies ($tag$...$tag$), comments and PostgreSQL's `::` casts
are skipped, so a `?` or `:x` inside them is text. `split` cuts a script
into statements at the semicolons outside those (the migrations).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Literal

from bridge.storage.errors import StorageError

Style = Literal["qmark", "numeric"]
Params = Sequence[object] | Mapping[str, object] | None

_NAME_START = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | set("0123456789")
# where a quote, comment, dollar quote or placeholder may start: the text between is
# copied as it is, not looked at character by character (a batch INSERT of 64 rows is
# some thousands of characters, and each new batch size is a statement parsed anew)
_NEXT = re.compile(r"['\"$?:]|--|/\*")


def _skip(sql: str, i: int) -> int:
    """The index after a quoted string, identifier, dollar quote or comment starting at
    `i`; `i` itself when none starts there."""
    c = sql[i]
    if c in "'\"":
        j = i + 1
        while j < len(sql):
            if sql[j] == c:
                if j + 1 < len(sql) and sql[j + 1] == c:
                    j += 2
                    continue
                return j + 1
            j += 1
        raise StorageError("unterminated quote in SQL")
    if sql.startswith("--", i):
        end = sql.find("\n", i)
        return len(sql) if end < 0 else end + 1
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        if end < 0:
            raise StorageError("unterminated comment in SQL")
        return end + 2
    if c == "$":
        j = i + 1
        while j < len(sql) and sql[j] in _NAME_CHARS:
            j += 1
        if j < len(sql) and sql[j] == "$" and not sql[i + 1 : j][:1].isdigit():
            tag = sql[i : j + 1]
            end = sql.find(tag, j + 1)
            if end < 0:
                raise StorageError("unterminated dollar quote in SQL")
            return end + len(tag)
    return i


@lru_cache(maxsize=1024)
def _parse(sql: str, style: Style) -> tuple[str, tuple[str, ...] | int]:
    """(translated sql, the names in order) for `:name`, (sql, count) for `?`."""
    if style == "qmark" and not _NEXT.search(sql.replace("?", "")):
        return sql, sql.count("?")  # nothing quoted, no comment, no :name: as it is
    out: list[str] = []
    names: list[str] = []
    positional = 0
    index: dict[str, int] = {}
    i = start = 0
    while (found := _NEXT.search(sql, i)) is not None:
        i = found.start()
        after = _skip(sql, i)
        if after != i:
            i = after
            continue
        c = sql[i]
        if c == ":" and sql.startswith("::", i):
            i += 2
            continue
        if c == "?":
            positional += 1
            out.append(sql[start:i])
            out.append("?" if style == "qmark" else f"${positional}")
            i = start = i + 1
            continue
        if c == ":" and i + 1 < len(sql) and sql[i + 1] in _NAME_START:
            j = i + 1
            while j < len(sql) and sql[j] in _NAME_CHARS:
                j += 1
            name = sql[i + 1 : j]
            out.append(sql[start:i])
            if style == "qmark":
                names.append(name)
                out.append("?")
            else:
                if name not in index:
                    names.append(name)
                    index[name] = len(names)
                out.append(f"${index[name]}")
            i = start = j
            continue
        i += 1
    out.append(sql[start:])
    if positional and names:
        raise StorageError("a statement uses `?` or `:name`, not both")
    return "".join(out), (tuple(names) if names else positional)


def translate(sql: str, params: Params, style: Style) -> tuple[str, tuple[object, ...]]:
    """The statement in the backend's placeholder style and its values in order."""
    text, wants = _parse(sql, style)
    if type(params) is tuple and type(wants) is int and len(params) == wants:
        return text, params  # the common case, without the checks below (a few a statement)
    if isinstance(wants, tuple):
        if not isinstance(params, Mapping):
            raise StorageError("a statement with :name placeholders takes a mapping")
        missing = [n for n in wants if n not in params]
        if missing:
            raise StorageError(f"no value for :{missing[0]}")
        return text, tuple(params[n] for n in wants)
    if isinstance(params, Mapping):
        if params:
            raise StorageError("a mapping was given but the statement has no :name")
        return text, ()
    values = tuple(params or ())
    if len(values) != wants:
        raise StorageError(f"the statement has {wants} `?`, {len(values)} values were given")
    return text, values


def translate_many(
    sql: str, rows: Sequence[Params], style: Style
) -> tuple[str, Sequence[tuple[object, ...]]]:
    """`translate` for one statement run once per row: its text, and each row's values.
    When the first row is a tuple of the `?` count, the rows are passed as they are (a
    text index's batch holds some hundreds, all made alike; one of another length or
    kind is refused by the driver all the same)."""
    text, wants = _parse(sql, style)
    first = rows[0] if rows else ()
    if type(wants) is int and type(first) is tuple and len(first) == wants:
        return text, rows  # type: ignore[return-value]
    return text, [translate(sql, p, style)[1] for p in rows]


def split(script: str) -> list[str]:
    """The non-empty statements of a script, cut at top-level semicolons."""
    parts: list[str] = []
    i = start = 0
    while i < len(script):
        after = _skip(script, i)
        if after != i:
            i = after
            continue
        if script[i] == ";":
            parts.append(script[start:i])
            start = i + 1
        i += 1
    parts.append(script[start:])
    return [p.strip() for p in parts if p.strip()]

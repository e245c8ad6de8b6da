"""The shapes of roost's own patterns, kept across processes like byte code.

`regex_shape.shape` reads a pattern's parse tree with `re._parser`, a parser
written in Python: for the screens' shipped patterns (every
`Scanner(..., shipped=True)`, read by `bridge.screening.prepare` right after a
daemon says it is ready, and by `roost chat` while the person types) that was
about 40 ms of CPU at every start, 60 % of the screens' preparation.
`shipped_shape(pattern)` returns the same `Shape`, from
`bridge/__pycache__/regex-shape.<cache tag>.marshal` when the file holds it;
a shape worked out here is added to the file when the process exits (as
`bridge.regex_code` keeps patterns, `bridge.dataclass_code` writing it: atomic,
as readable as the package, nothing when byte-code writing is off or the
folder is not writable; `bridge.cli.precompile` writes it at install).

A shape is only as right as the code that worked it out, and the screens skip
text by it: the file is tied to the interpreter (its `re` parser) and to the
SHA-256 of `regex_shape.py`'s source, so a file written by another version of
either is ignored (and replaced). Without the source (a byte-code-only
install) nothing is kept. Only shipped patterns come here: never one built from
what a person sent or a secret. The file holds at most `_MAX` shapes; past
that, a process writes only those it used (patterns edited away go).
"""

from __future__ import annotations

import atexit
import hashlib
import re
import sys
from functools import cache
from pathlib import Path

from bridge.dataclass_code import KeptEntries, cache_path
from bridge.screening import regex_shape
from bridge.screening.regex_shape import Shape, shape

_MAX = 2_000  # shapes kept (roost ships about 160 scanned patterns)

Key = tuple[str, int]  # (pattern, flags)
Entry = tuple[frozenset[str], tuple[frozenset[str], ...], int, int, int, bool, bool]


def header(source: bytes) -> bytes:
    digest = hashlib.sha256(source).hexdigest()
    return f"roost-shape 1|{sys.version}|{digest}\n".encode()


class Shapes(KeptEntries):
    """The file's shapes (Key -> Entry) and those this process worked out; `save` at exit."""

    def __init__(self, path: Path, source: bytes) -> None:
        super().__init__(path, header(source), _MAX)

    def get(self, pattern: re.Pattern[str]) -> Shape:
        key: Key = (pattern.pattern, pattern.flags)
        found = self.entries.get(key)
        self.used.add(key)
        if found is not None:
            return Shape(*found)
        made = shape(pattern)
        self.entries[key] = (
            made.literals, made.also, made.width, made.shortest, made.reach, made.bounded,
            made.caseless,
        )  # fmt: skip
        self.added += 1
        return made


@cache
def _shapes() -> Shapes | None:
    """The process's shapes, read on the first shipped shape asked for (None: no source)."""
    try:
        source = Path(regex_shape.__file__).read_bytes()
    except OSError:
        return None
    shapes = Shapes(cache_path(None, "regex-shape"), source)
    atexit.register(shapes.save)
    return shapes


def shipped_shape(pattern: re.Pattern[str]) -> Shape:
    """`shape(pattern)` for a pattern of roost's own (written in its source or its rule
    file), kept across processes."""
    shapes = _shapes()
    return shapes.get(pattern) if shapes is not None else shape(pattern)

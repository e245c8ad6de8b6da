"""Look-up terms to an FTS5 MATCH expression that can only mean "any of these words".

Every term becomes a double-quoted FTS5 string (an embedded `"` doubled), the
strings joined by `OR`. Inside quotes FTS5 reads no operator: `NEAR`, `AND`,
`OR`, `NOT`, `*`, `^`, `:` column filters, parentheses and `+` are plain
text there, so nothing a person or the model typed is ever FTS5 syntax.
The terms come from `bridge.recall.terms.query_terms` (letters and digits
only); the quoting holds for any string all the same, and the tests feed it
hostile strings directly.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_TERMS = 64  # a query is cut to its first 64 distinct terms


def quote(term: str) -> str:
    """One FTS5 string literal: `"` + term with `"` doubled + `"`; NUL dropped."""
    return '"' + term.replace("\x00", "").replace('"', '""') + '"'


def any_of(terms: Iterable[str]) -> str:
    """`"a" OR "b" OR ...` for the non-empty terms (at most MAX_TERMS); "" when none."""
    quoted = [quote(t) for t in terms if t.replace("\x00", "").strip()][:MAX_TERMS]
    return " OR ".join(quoted)

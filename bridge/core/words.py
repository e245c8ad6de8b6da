"""Counted nouns in what roost says: "1 call", "2 calls", never "1 calls" (pure).

`count(n, "call")` adds "s" for any number but one; an irregular plural is
passed (`count(n, "entry", "entries")`). Numbers get thousands separators.
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the form that fits it."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"

"""Query text never reaches FTS5 as syntax: every operator is read as a plain word.

Each FTS5 operator (quotes, NEAR, *, ^, column filters, AND/OR/NOT, parentheses,
+, -) is searched through the real index (the `Database`'s text index, whose
quoting is `bridge.storage.fts`'s): the search must not fail and must find only
messages holding the words; `bridge.recall.match`'s quoting (the plain BM25
baseline of the eval) is checked on raw strings against a real FTS5 table, and
a hypothesis property test feeds it arbitrary text.
"""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.recall.index import Message, RecallIndex
from bridge.recall.match import MAX_TERMS, any_of, quote
from bridge.recall.search import search
from bridge.recall.terms import MAX_QUERY_CHARS, query_terms
from bridge.storage.protocol import Database

TEXTS = [
    "We planned the NEAR future trip to Lisbon",
    "body: the column filter story about gardening",
    "cats AND dogs OR birds NOT fish",
    "the star * and the caret ^ in a regex",
    'she said "hello there" quietly',
    "plain message about tea",
]


@pytest.fixture
async def index(db: Database) -> RecallIndex:
    idx = RecallIndex(db, "t")
    await idx.add(
        Message("c", f"m{i}", "user", text, 1_000 + i, "web") for i, text in enumerate(TEXTS)
    )
    return idx


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"hello there', {"m4"}),  # an unbalanced quote
        ('hello" OR "tea', {"m4", "m5"}),  # a quote that would close the string early
        ("NEAR(lisbon trip, 2)", {"m0"}),
        ("lisbon*", {"m0"}),  # a prefix star: "lisbon" only, never a prefix query
        ("^lisbon", {"m0"}),  # initial-token caret
        ("body:gardening", {"m1"}),  # a column filter
        ("{body who}:gardening", {"m1"}),  # a column-set filter
        ("cats AND fish", {"m2"}),
        ("dogs OR tea", {"m2", "m5"}),
        ("tea NOT cats", {"m2", "m5"}),  # NOT is a word here, not an operator
        ("(tea) + (regex)", {"m3", "m5"}),
        ("-tea", {"m5"}),
        ("caret ^ star *", {"m3"}),
    ],
)
async def test_each_operator_is_a_plain_word(
    index: RecallIndex, query: str, expected: set[str]
) -> None:
    hits = {h.row.msg_id for h in await search(index, query, 10)}
    assert hits == expected


@pytest.mark.parametrize(
    "raw",
    [
        '"',
        '""',
        'a"b',
        "NEAR",
        "AND",
        "OR",
        "NOT",
        "*",
        "^",
        "body:x",
        "(",
        ")",
        "+",
        "a\x00b",
        "'",
    ],
)
def test_quote_makes_any_string_a_valid_fts5_string(raw: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    conn.execute("INSERT INTO t (body) VALUES ('a b near and or not body x')")
    conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (quote(raw),)).fetchall()


def test_any_of_caps_terms_and_skips_empty_ones() -> None:
    assert any_of(["", " ", "\x00"]) == ""
    assert any_of(str(i) for i in range(MAX_TERMS + 10)).count(" OR ") == MAX_TERMS - 1


async def test_a_100k_query_is_cut(index: RecallIndex) -> None:
    long = "tea " + "x" * (MAX_QUERY_CHARS + 50_000) + " lisbon"
    assert "lisbon" not in query_terms(long)
    assert {h.row.msg_id for h in await search(index, long, 10)} == {"m5"}


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=0, max_size=200))
def test_any_text_is_a_valid_query(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, who)")
    conn.execute("INSERT INTO t (body, who) VALUES ('a b c', 'd')")
    expr = any_of(query_terms(text))
    if expr:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()
    raw = any_of([text])  # the quoting alone, on the raw text
    if raw:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (raw,)).fetchall()

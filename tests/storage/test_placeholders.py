"""One placeholder style, translated per backend; quoted text is never a placeholder."""

from __future__ import annotations

import pytest

from bridge.storage.errors import StorageError
from bridge.storage.placeholders import split, translate, translate_many


def test_positional_becomes_numbered_for_postgresql() -> None:
    sql = "SELECT * FROM t WHERE a = ? AND b = ?"
    assert translate(sql, (1, "x"), "numeric") == (
        "SELECT * FROM t WHERE a = $1 AND b = $2",
        (1, "x"),
    )
    assert translate(sql, [1, "x"], "qmark") == (sql, (1, "x"))


def test_named_repeats_share_one_number_and_keep_order_for_sqlite() -> None:
    sql = "UPDATE t SET a = :v WHERE k = :key OR a = :v"
    assert translate(sql, {"v": 5, "key": "k"}, "numeric") == (
        "UPDATE t SET a = $1 WHERE k = $2 OR a = $1",
        (5, "k"),
    )
    assert translate(sql, {"v": 5, "key": "k"}, "qmark") == (
        "UPDATE t SET a = ? WHERE k = ? OR a = ?",
        (5, "k", 5),
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT '?', ':x', 'it''s ?' FROM t",
        'SELECT "col?", "a:b" FROM t',
        "SELECT 1 -- a ? and :x\nFROM t",
        "SELECT /* ? :x */ 1",
        "SELECT $$ ? :x $$, $tag$ ':y' ? $tag$",
        "SELECT CAST(1 AS TEXT)::TEXT, x::bigint FROM t",
    ],
)
def test_text_in_quotes_comments_and_casts_is_not_a_placeholder(sql: str) -> None:
    assert translate(sql, None, "numeric") == (sql, ())
    assert translate(sql, None, "qmark") == (sql, ())


def test_a_cast_after_a_placeholder_stays_a_cast() -> None:
    assert translate("SELECT :x::bigint", {"x": 1}, "numeric") == ("SELECT $1::bigint", (1,))


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT ? , :x", (1,)),
        ("SELECT :x", (1,)),
        ("SELECT ?", {"x": 1}),
        ("SELECT :x", {"y": 1}),
        ("SELECT ?, ?", (1,)),
        ("SELECT ?", (1, 2)),
        ("SELECT 'open", ()),
        ("SELECT 1 /* open", ()),
        ("SELECT $a$ open", ()),
    ],
)
def test_mismatches_are_refused(sql: str, params: object) -> None:
    for style in ("numeric", "qmark"):
        with pytest.raises(StorageError):
            translate(sql, params, style)  # type: ignore[arg-type]


def test_a_tuple_of_the_right_count_is_handed_on_as_it_is() -> None:
    values = (1, "x")
    sql = "SELECT * FROM t WHERE a = ? AND b = ?"
    assert translate(sql, values, "qmark")[1] is values
    assert translate(sql, values, "numeric") == ("SELECT * FROM t WHERE a = $1 AND b = $2", values)
    with pytest.raises(StorageError):  # a `?` in quotes is no placeholder: one value too many
        translate("SELECT '?', ?", (1, 2), "qmark")


def test_split_cuts_at_top_level_semicolons_only() -> None:
    script = "CREATE TABLE a (x TEXT DEFAULT ';');\n-- c; d\nCREATE TABLE b (y TEXT);\n  ;"
    assert split(script) == [
        "CREATE TABLE a (x TEXT DEFAULT ';')",
        "-- c; d\nCREATE TABLE b (y TEXT)",
    ]


def test_rows_of_one_statement_pass_as_they_are_when_they_are_its_tuples() -> None:
    rows = [(1, "a"), (2, "b")]
    text, values = translate_many("INSERT INTO t (a, b) VALUES (?, ?)", rows, "numeric")
    assert text == "INSERT INTO t (a, b) VALUES ($1, $2)" and values is rows
    named = [{"a": 1, "b": "x"}, {"b": "y", "a": 2}]
    _, values = translate_many("INSERT INTO t (a, b) VALUES (:a, :b)", named, "qmark")
    assert values == [(1, "x"), (2, "y")]
    _, values = translate_many("INSERT INTO t (a) VALUES (?)", [[1], [2]], "qmark")
    assert values == [(1,), (2,)]
    assert translate_many("SELECT 1", [], "qmark") == ("SELECT 1", [])

"""Full-text search: the same terms, ranking and escaping on both backends (conformance).

The ranking contract is checked against BM25 computed here in Python from
`fts.terms` (k1 1.2, b 0.75, FTS5's idf floor), over a seeded Zipf-like
corpus and a handful of real sentences; both backends must return exactly
that order and those scores (rounded as the contract says).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bridge.storage import fts, units
from bridge.storage.errors import IntegrityError
from bridge.storage.sqlite import SqliteDatabase
from bridge.storage.sqlite import text as sqlite_text

SENTENCES = [
    "All human beings are born free and equal in dignity and rights.",
    "Alle Menschen sind frei und gleich an Würde und Rechten geboren.",
    "Everyone has the right to life, liberty and security of person.",
    "Jeder hat das Recht auf Leben, Freiheit und Sicherheit der Person.",
    "No one shall be held in slavery or servitude.",
    "Tous les êtres humains naissent libres et égaux en dignité et en droits.",
    "Все люди рождаются свободными и равными в своем достоинстве и правах.",
    "人人生而自由，在尊严和权利上一律平等。",
    "Straße, Maße, naïve café — résumé; ÆSIR ǅemal ﬁne",
    "the cat sat on the mat; the cat; THE CAT",
]
HOSTILE = [
    "cat AND dog",
    "cat OR dog",
    "NOT cat",
    "NEAR(cat dog, 2)",
    "cat*",
    "^cat",
    "body:cat",
    "{body} : cat",
    '"cat',
    'cat"',
    "(cat",
    "cat)",
    "+cat",
    "-cat",
    "cat & dog",
    "cat | dog",
    "!cat",
    "cat <-> dog",
    "cat <2> dog",
    "cat:*",
    "cat:A",
    "'cat'",
    "ca't",
    "back\\slash",
    "\\'",
    "''",
    "\x00cat",
    "%cat_",
    "cat;--",
    "$$cat$$",
    "cat\ndog",
    "   ",
]


def _corpus(n: int = 300) -> list[str]:
    rng = random.Random(25)
    vocab = [f"w{i}" for i in range(120)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=rng.randint(0, 30))) for _ in range(n)]


def _bm25(docs: dict[int, str], query: list[str]) -> list[tuple[int, float]]:
    counted = {d: Counter(fts.terms(t)) for d, t in docs.items()}
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in counted.values()) / n
    terms = fts.query_terms(query)
    idf = {}
    for t in terms:
        hits = sum(1 for c in counted.values() if t in c)
        idf[t] = max(math.log((n - hits + 0.5) / (hits + 0.5)), fts.IDF_FLOOR)
    scored = []
    for d, c in counted.items():
        if not any(t in c for t in terms):
            continue
        size = sum(c.values())
        s = sum(
            idf[t] * c[t] * (fts.K1 + 1) / (c[t] + fts.K1 * (1 - fts.B + fts.B * size / avgdl))
            for t in terms
            if t in c
        )
        scored.append((d, round(s, fts.SCORE_DIGITS)))
    return sorted(scored, key=lambda ds: (-ds[1], ds[0]))


async def _fill(db: Any, docs: dict[int, str], tenant: str = "alice") -> Any:
    index = db.text_index("recall", tenant)
    async with db.transaction():
        for doc, text in docs.items():
            await index.add(doc, text)
    return index


@pytest.mark.parametrize(
    "query", [["w0"], ["w3", "w50"], ["w119", "w7", "w1"], ["w0", "w1", "w2", "w3", "w4"]]
)
async def test_ranking_is_bm25_as_fts5_computes_it(db: Any, query: list[str]) -> None:
    docs = dict(enumerate(_corpus(), start=1))
    index = await _fill(db, docs)
    want = _bm25(docs, query)
    got = await index.search(query, 1000)
    assert [d for d, _ in got] == [d for d, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9, abs=1e-12)
    assert await index.search(query, 5) == got[:5]
    floor = sorted(docs)[150]
    assert await index.search(query, 1000, min_doc=floor) == [g for g in got if g[0] >= floor]


async def test_real_sentences_in_many_scripts_are_found_by_their_words(db: Any) -> None:
    docs = dict(enumerate(SENTENCES, start=1))
    index = await _fill(db, docs)
    for doc, text in docs.items():
        for term in set(fts.terms(text)):
            hits = [d for d, _ in await index.search([term], 50)]
            assert doc in hits, (term, text)
    assert [d for d, _ in await index.search(["Würde"], 5)] == [2]
    assert [d for d, _ in await index.search(["wurde"], 5)] == [2]  # diacritics folded
    assert [d for d, _ in await index.search(["STRASSE"], 5)] == [9]  # ß casefolds to ss
    assert [d for d, _ in await index.search(["fine"], 5)] == [9]  # the ﬁ ligature
    assert await index.search(["rights", "droits"], 10) == _bm25(docs, ["rights", "droits"])


@pytest.mark.parametrize("query", HOSTILE)
async def test_every_operator_in_query_text_is_data(db: Any, query: str) -> None:
    docs = {
        1: "cat and dog",
        2: "not a cat",
        3: "near the dog",
        4: "body of a cat",
        5: "a b c slash back",
        6: "category catalogue",
    }
    index = await _fill(db, docs)
    got = await index.search([query], 10)
    assert got == _bm25(docs, [query]) if fts.query_terms([query]) else got == []
    assert 6 not in [d for d, _ in got]  # `cat*` is no prefix search
    assert await index.doc_freq([query], 10) == {
        t: sum(t in fts.terms(x) for x in docs.values()) for t in fts.query_terms([query])
    }


async def test_tenants_are_apart_in_results_and_in_the_counts(db: Any) -> None:
    docs = dict(enumerate(_corpus(80), start=1))
    alice = await _fill(db, docs, "alice")
    bob = await _fill(db, {1: "w0 w0 w0 secret", 500: "w1"}, "bob")
    assert await alice.search(["w0", "w1"], 200) == _bm25(docs, ["w0", "w1"])
    assert await alice.search(["secret"], 5) == []
    assert [d for d, _ in await bob.search(["w0", "w1"], 5)] == [1, 500]
    assert await alice.count() == 80 and await bob.count() == 2


TENTH = {1: "w0 mine10", 2: "w0 w1", 3: "w0 secret secret"}


async def test_many_tenants_with_the_same_words_see_only_their_own(db: Any) -> None:
    # a dozen tenants (SQLite's keys 1..12: "1_" is a prefix of "11_" as text) with the
    # same words, "secret" in one: each finds its own documents, from min_doc too
    indexes = [await _fill(db, {1: f"w0 mine{i}", 2: "w0 w1"}, f"t{i}") for i in range(12)]
    await indexes[10].add(3, "w0 secret secret")
    for i, index in enumerate(indexes):
        assert [d for d, _ in await index.search([f"mine{i}"], 5)] == [1]
        assert await index.search([f"mine{(i + 1) % 12}"], 5) == []
        assert await index.doc_freq(["w0", "secret"], 100) == {
            "w0": 3 if i == 10 else 2,
            "secret": 1 if i == 10 else 0,
        }
        assert await index.search(["secret"], 5, min_doc=1) == (
            [(3, pytest.approx(_bm25(TENTH, ["secret"])[0][1]))] if i == 10 else []
        )


async def test_doc_freq_nth_newest_remove_and_drop(db: Any) -> None:
    docs = {i: ("apple pie" if i % 3 == 0 else "pear tart") for i in range(1, 31)}
    index = await _fill(db, docs)
    assert await index.doc_freq(["apple", "pear", "plum"], 100) == {
        "apple": 10,
        "pear": 20,
        "plum": 0,
    }
    assert await index.doc_freq(["pear"], 5) == {"pear": 5}
    assert await index.nth_newest(["apple"], 1) == 30
    assert await index.nth_newest(["apple"], 3) == 24
    assert await index.nth_newest(["apple"], 11) is None
    assert await index.remove(30) is True
    assert await index.remove(30) is False
    assert await index.nth_newest(["apple"], 1) == 27
    remaining = {d: t for d, t in docs.items() if d != 30}
    assert await index.search(["apple", "tart"], 100) == _bm25(remaining, ["apple", "tart"])
    with pytest.raises(IntegrityError):
        await index.add(1, "again")
    assert await db.text_index_names("alice") == ["recall"]
    await index.drop()
    assert await index.search(["apple"], 5) == [] and await index.count() == 0
    assert await db.text_index_names("alice") == []
    await index.add(1, "apple")  # a dropped index starts again when written
    assert await index.search(["apple"], 5) == [(1, pytest.approx(await _score1()))]


async def test_removing_every_document_leaves_no_terms_counted(db: Any) -> None:
    """Each removal uncounts exactly its document's terms, in any script (SQLite: its
    postings and document frequencies go with it, none left behind)."""
    docs = {i + 1: t for i, t in enumerate(SENTENCES + HOSTILE + ["", "w w w w"])}
    index = await _fill(db, docs)
    other = await _fill(db, {1: SENTENCES[0]}, tenant="bob")
    words = sorted({w for t in docs.values() for w in fts.terms(t)})
    for doc in sorted(docs, reverse=True):
        assert await index.remove(doc) is True
    assert await index.count() == 0
    for at in range(0, len(words), fts.MAX_QUERY_TERMS):
        chunk = words[at : at + fts.MAX_QUERY_TERMS]
        assert await index.doc_freq(chunk, 100) == dict.fromkeys(chunk, 0)
        assert await index.search(chunk, 100) == [] and await index.nth_newest(chunk, 1) is None
    assert await other.count() == 1 and await other.search(["human"], 5) != []
    if isinstance(db, SqliteDatabase):
        left = await db.fetch_all(
            "SELECT count(*) FROM storage_fts_postings UNION ALL "
            "SELECT count(*) FROM storage_fts_df"
        )
        assert left == [(len(set(fts.terms(SENTENCES[0]))),)] * 2


async def _score1() -> float:
    return _bm25({1: "apple"}, ["apple"])[0][1]


async def test_an_index_never_written_is_empty(db: Any) -> None:
    index = db.text_index("recall", "nobody")
    assert await index.search(["x"], 5) == []
    assert await index.doc_freq(["x"], 5) == {"x": 0}
    assert await index.nth_newest(["x"], 1) is None
    assert await index.count() == 0
    assert await index.remove(1) is False


async def test_a_rolled_back_add_leaves_nothing(db: Any) -> None:
    index = db.text_index("recall", "alice")
    await index.add(1, "kept words")
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await index.add(2, "kept lost")
            raise RuntimeError
    assert await index.search(["kept"], 5) == _bm25({1: "kept words"}, ["kept"])
    assert await index.count() == 1


_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40
)


# compatibility characters that decompose to capitals or to several letters: '𝕊' was
# indexed as 'S' on PostgreSQL and never found by 'S' (searched as 's') until the fold
# became Unicode's compatibility caseless match
_FOLDS = "𝕊 ℌ ǅ Ⅻ ﬁ ㎒ Ⓐ ＡＢ ß İ"


@given(text=_TEXT)
@example(text=_FOLDS)
def test_a_term_is_its_own_term(text: str) -> None:
    for term in fts.terms(text):
        assert fts.terms(term) == [term]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(_TEXT, min_size=1, max_size=4))
@example(texts=[_FOLDS, "S"])
async def test_any_text_is_found_by_each_of_its_terms(db: Any, texts: list[str]) -> None:
    index = db.text_index("prop", "t")
    await index.drop()
    docs = dict(enumerate(texts, start=1))
    for d, t in docs.items():
        await index.add(d, t)
    for d, t in docs.items():
        for term in set(fts.terms(t)):
            assert d in [h for h, _ in await index.search([term], 10)], (term, t)


async def test_newest_and_from_min_doc_when_docs_were_added_out_of_order(db: Any) -> None:
    """SQLite reads the newest matches by insertion (rowid); docs added in any order
    still give the n-th largest doc, and search from `min_doc` scores every doc from it
    (repeated terms counted) as the full search does."""
    rng = random.Random(5)
    corpus = _corpus(120)
    order = list(range(1, 121))
    rng.shuffle(order)
    docs = {d: corpus[d - 1] + (" w0 w0" if d % 7 == 0 else "") for d in order}
    index = db.text_index("recall", "alice")
    for start in range(0, 120, 30):  # several adds, each out of doc order
        await index.add_many([(d, docs[d]) for d in order[start : start + 30]])
    query = ["w0", "w3", "w9"]
    matching = sorted((d for d in docs if set(fts.terms(docs[d])) & set(query)), reverse=True)
    for n in (1, 5, 40, len(matching)):
        assert await index.nth_newest(query, n) == matching[n - 1]
    assert await index.nth_newest(query, len(matching) + 1) is None
    want = _bm25(docs, query)
    for floor in (1, 37, matching[10]):
        assert await index.search(query, 1000, min_doc=floor) == [g for g in want if g[0] >= floor]
        assert await index.search(query, 3, min_doc=floor) == [g for g in want if g[0] >= floor][:3]


@pytest.mark.parametrize("size", [1, 31, 32, 33, 300])
async def test_one_batch_writes_every_posting_and_count_as_added_one_by_one(
    db: Any, size: int
) -> None:
    """`add_many` of batches whose rows are whole multi-row statements, a rest, or only a
    rest (SQLite writes them 32 at a time) ranks as the oracle does, and a batch with a
    known document adds none of its documents; on SQLite the documents are their terms,
    the postings exactly each document's distinct terms (tf and length) and the document
    frequencies how many documents hold each (repeated terms in one document counted
    once, the second batch's added to the first's)."""
    docs = dict(enumerate(_corpus(size), start=1))
    docs[size] = "w1 w1 w2 w1"  # a term twice in one document
    index = db.text_index("recall", "alice")
    items = list(docs.items())
    await index.add_many(items[: size // 2])  # the second batch counts terms seen before
    await index.add_many(items[size // 2 :])
    with pytest.raises(IntegrityError):  # a batch with one known document adds nothing
        await index.add_many([(size + 1 + i, "w1 new") for i in range(40)] + [(1, "w1")])
    assert await index.count() == size
    for query in (["w0"], ["w1", "w7"], ["w3", "w50", "w119"]):
        assert await index.search(query, 400) == _bm25(docs, query)
    if isinstance(db, SqliteDatabase):
        want = sorted(
            (term, doc, tf, len(fts.terms(text)))
            for doc, text in docs.items()
            for term, tf in Counter(fts.terms(text)).items()
        )
        got = await db.fetch_all(
            "SELECT term, doc, tf, len FROM storage_fts_postings ORDER BY term, doc"
        )
        assert [tuple(r) for r in got] == want
        bodies = await db.fetch_all("SELECT doc, len, body FROM storage_fts_docs ORDER BY doc")
        assert [tuple(r) for r in bodies] == [
            (doc, len(fts.terms(text)), " ".join(fts.terms(text))) for doc, text in items
        ]
        df = Counter(term for _, text in docs.items() for term in set(fts.terms(text)))
        rows = await db.fetch_all("SELECT term, n FROM storage_fts_df ORDER BY term")
        assert [tuple(r) for r in rows] == sorted(df.items())


@pytest.mark.parametrize("size", [2, 40])
async def test_adding_commits_with_the_callers_unit_or_not_at_all(db: Any, size: int) -> None:
    """`TextIndex.adding` as part of a caller's unit (`Database.atomic`): its documents
    commit with the caller's own row and rank as `add_many`'s; a step of the unit failing
    after them leaves neither the row nor a document, posting or count."""
    await db.execute("CREATE TABLE fts_owner (id INTEGER PRIMARY KEY)")
    docs = dict(enumerate(_corpus(size), start=1))
    index = db.text_index("recall", "alice")

    def unit(fail: bool) -> Any:
        yield units.execute("INSERT INTO fts_owner (id) VALUES (?)", (size,))
        yield from index.adding(list(docs.items()))
        if fail:
            yield units.execute("INSERT INTO fts_owner (id) VALUES (?)", (size,))

    with pytest.raises(IntegrityError):
        await db.atomic(unit(fail=True))
    assert await index.count() == 0 and await index.search(["w0", "w1"], 100) == []
    assert await db.fetch_all("SELECT id FROM fts_owner") == []
    if isinstance(db, SqliteDatabase):
        for table in ("storage_fts_docs", "storage_fts_postings", "storage_fts_df"):
            assert await db.fetch_value(f"SELECT count(*) FROM {table}") == 0
    await db.atomic(unit(fail=False))
    assert await db.fetch_all("SELECT id FROM fts_owner") == [(size,)]
    assert await index.count() == size
    for query in (["w0"], ["w1", "w7"]):
        assert await index.search(query, 400) == _bm25(docs, query)


@given(
    st.lists(
        st.tuples(
            st.integers(-5, 50), st.lists(st.sampled_from(["a", "b", "bb", "c", "é"]), max_size=6)
        ),
        max_size=12,
        unique_by=lambda d: d[0],
    )
)
def test_a_batchs_postings_are_each_documents_distinct_terms_in_key_order(
    found: list[tuple[int, list[str]]],
) -> None:
    """SQLite's postings of a batch (grouped by term, not sorted as tuples): every
    document's distinct terms with their counts and its length, sorted as the primary
    key (term, doc); the document frequencies one row per term, how many documents hold
    it; whatever order the documents come in."""
    postings, held = sqlite_text._postings(7, found)
    assert postings == sorted(
        (7, term, doc, tf, len(terms))
        for doc, terms in found
        for term, tf in Counter(terms).items()
    )
    df = Counter(term for _, terms in found for term in set(terms))
    assert held == [(7, term, n) for term, n in sorted(df.items())]

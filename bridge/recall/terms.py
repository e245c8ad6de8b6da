"""Words to index terms: folding, stop words, Snowball stems, English and German.

One function per side of the index. `index_terms(text)` is what is stored for
a message: its words lowercased, each stemmed by the Snowball stemmer of the
message's language (`guess_language`: English or German by stop-word hits),
diacritics folded after stemming (the German stemmer reads the umlauts first).
`query_terms(text)` is what is looked up: stop words of both languages left
out, and each word stemmed both ways (English and German), so a German query
finds a German message and an English one an English message without knowing
the language of either. The terms are `[a-z0-9]` runs only: nothing the
person typed can reach the FTS5 query syntax from here (`bridge.recall.match`
quotes them all the same).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

WORD = re.compile(r"[^\W_]+")
MAX_WORD = 40  # longer runs (hashes, base64) are cut, not indexed whole
MAX_QUERY_CHARS = 100_000  # a longer query is cut before anything else runs

_ENGLISH_TEXT = """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can could couldn did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here
    hers herself him himself his how i if in into is isn it its itself just ll me might more
    most mustn my myself no nor not now of off on once only or other our ours ourselves out
    over own re s same shan she should shouldn so some such t than that the their theirs
    them themselves then there these they this those through to too under until up ve very
    was wasn we were weren what when where which while who whom why will with won would
    wouldn you your yours yourself yourselves d m o y also yeah yes oh hey hi ok okay really
    get got go going gonna lot lots much thing things
"""
ENGLISH_STOP = frozenset(_ENGLISH_TEXT.split())

_GERMAN_TEXT = """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anderm andern anderr anders auch auf aus bei bin bis bist da damit dann das dass
    dasselbe dazu dein deine deinem deinen deiner deines dem demselben den denn denselben
    der derer derselbe derselben des desselben dessen dich die dies diese dieselbe dieselben
    diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines
    einig einige einigem einigen einiger einiges einmal er es etwas euch euer eure eurem
    euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich
    ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im in indem ins ist ja jede jedem jeden
    jeder jedes jene jenem jenen jener jenes jetzt kann kein keine keinem keinen keiner
    keines können könnte machen man manche manchem manchen mancher manches mein meine meinem
    meinen meiner meines mich mir mit muss musste nach nicht nichts noch nun nur ob oder
    ohne sehr sein seine seinem seinen seiner seines selbst sich sie sind so solche solchem
    solchen solcher solches soll sollte sondern sonst über um und uns unsere unserem unseren
    unserer unseres unter viel vom von vor während war waren warst was weg weil weiter
    welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird wirst
    wo wollen wollte würde würden zu zum zur zwar zwischen wann warum wer wen wem
"""
GERMAN_STOP = frozenset(_GERMAN_TEXT.split())

STOP = ENGLISH_STOP | GERMAN_STOP
_ENGLISH_ONLY = ENGLISH_STOP - GERMAN_STOP
_GERMAN_ONLY = GERMAN_STOP - ENGLISH_STOP


@lru_cache(maxsize=2)
def _stemmer(language: str) -> Stemmer.Stemmer:
    stemmer = Stemmer.Stemmer(language)
    stemmer.maxCacheSize = 200_000
    return stemmer


def fold(word: str) -> str:
    """Diacritics removed (`café` -> `cafe`, `straße` -> `strasse`), lowercase."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """The lowercased words of `text`, each at most MAX_WORD characters."""
    found: list[str] = WORD.findall(text.casefold())
    if found and max(map(len, found)) > MAX_WORD:
        return [w[:MAX_WORD] for w in found]
    return found


def guess_language(tokens: list[str]) -> str:
    """'german' when more of the words are German-only stop words than English-only ones."""
    said = set(tokens)
    german = len(_GERMAN_ONLY.intersection(said))
    return "german" if german > len(_ENGLISH_ONLY.intersection(said)) else "english"


def index_terms(text: str) -> str:
    """The stored terms of one message: its content words' stems (its language's stemmer),
    folded, space-separated. Stop words are not stored: no query looks them up."""
    tokens = words(text)
    if not tokens:
        return ""
    language = guess_language(tokens)
    content = [w for w in tokens if w not in STOP] or tokens
    return _fold_ascii(" ".join(_stemmer(language).stemWords(content)))


def index_term_set(text: str) -> frozenset[str]:
    """The distinct terms of `index_terms(text)`, each distinct word stemmed once (a
    note's terms: repeated words cost nothing more)."""
    tokens = words(text)
    if not tokens:
        return frozenset()
    language = guess_language(tokens)
    content = list(dict.fromkeys(w for w in tokens if w not in STOP)) or list(dict.fromkeys(tokens))
    return frozenset(_fold_ascii(" ".join(_stemmer(language).stemWords(content))).split())


def query_groups(text: str) -> list[tuple[str, ...]]:
    """Per distinct content word of a query, its look-up terms (English and German stems)."""
    tokens = [w for w in words(text[:MAX_QUERY_CHARS]) if w not in STOP]
    if not tokens:  # a query of stop words only: look them up rather than find nothing
        tokens = words(text[:MAX_QUERY_CHARS])
    groups: dict[tuple[str, ...], None] = {}
    for word in dict.fromkeys(tokens):
        group = _group(word)
        if group:
            groups.setdefault(group, None)
    return list(groups)


@lru_cache(maxsize=65_536)
def _group(word: str) -> tuple[str, ...]:
    """One word's look-up terms: its English and German stems, folded, each once (worked
    out once per word while it is among the most recent: people reuse their words)."""
    en = _fold_ascii(_stemmer("english").stemWord(word))
    de = _fold_ascii(_stemmer("german").stemWord(word))
    return tuple(t for t in (en, de) if t) if en != de else ((en,) if en else ())


def query_terms(text: str) -> list[str]:
    """The distinct look-up terms of a query, in order: content words stemmed both ways."""
    return list(dict.fromkeys(t for group in query_groups(text) for t in group))


def _fold_ascii(stems: str) -> str:
    """Stems (space-separated) with diacritics folded; letters, digits and spaces only."""
    if stems.isascii():
        return stems
    return "".join(ch for ch in fold(stems) if ch.isalnum() or ch == " ")

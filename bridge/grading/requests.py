"""Is a follow-up itself a request? The gate before the judge is asked (pure, en + de).

The lexical stage is silent (neutral) on most follow-ups; only those that
ask for something can be a rephrase, so only those go to the judge. A
message is a request when it has a question mark, a repair marker ("I
mean", "ich meinte", "anders gefragt"), a question word, or starts with a
modal, an imperative or a want/need; or when it is a keyword query (three
words or more that do not open as a statement: "python join list comma").
Short reactions and statements ("I'm free!! lol", "es läuft") are not.
The gate is generous on purpose: the daily cap bounds what it costs.
"""

from __future__ import annotations

from bridge.grading.text import tokens

REPAIR = (
    "i mean", "i meant", "i'm asking", "im asking", "i asked", "what i want",
    "in other words", "let me rephrase", "to be clear", "i was asking",
    "ich meine", "ich meinte", "ich mein", "anders gefragt", "mit anderen worten",
    "ich wollte wissen", "ich frage", "ich hab gefragt", "gemeint",
)  # fmt: skip
QUESTION = frozenset(
    """
    how what why which where when who whom whose
    wie was warum wieso weshalb welche welcher welches welchen wo woher wohin wann wer
    wen wem womit wofür worum
    """.split()  # noqa: SIM905
)
STARTERS = frozenset(
    """
    can could would will should shall may is are do does did have has any
    give show tell write make find list explain help get put add remove delete
    translate convert summarize summarise suggest recommend fix set create plan
    need want please try now also instead
    kann kannst könnte könntest würdest sollte soll muss gibt gib zeig zeige sag
    schreib schreibe mach mache erklär erkläre hilf finde nenn nenne übersetze
    rechne fass fasse empfiehl schlag plane erstelle lösche ändere bitte brauch
    brauche will möchte ist sind hat habe hast gibts bräuchte
    """.split()  # noqa: SIM905
)
FILLERS = frozenset(
    """
    no nope nah ok okay so well hmm um and but sorry hey hi btw again
    nein nee ne also und aber sorry übrigens nochmal naja hm
    """.split()  # noqa: SIM905
)
STATEMENT = frozenset(
    """
    i i'm i've i'd it it's that that's this these you you're we they he she there
    there's my our yes yeah yep thanks thank thx ty great perfect nice cool wow lol
    haha oh ah aha done works worked still
    ich es das dies du wir sie er da mein meine ja danke super top klasse
    prima läuft geht hat hab habe bin war ist's dann
    """.split()  # noqa: SIM905
)


def is_request(text: str) -> bool:
    """Whether the message asks for something (and so may restate the last request)."""
    if "?" in text:
        return True
    low = " ".join(text.lower().replace("’", "'").split())
    if any(marker in low for marker in REPAIR):
        return True
    words = tokens(text)
    if any(w in QUESTION for w in words):
        return True
    rest = words
    while rest and rest[0] in FILLERS:
        rest = rest[1:]
    if not rest:
        return False
    if rest[0] in STARTERS:
        return True
    if rest[0] in STATEMENT or "!" in text:
        return False
    return len(rest) >= 3

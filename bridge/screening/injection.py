"""Instructions to the assistant hidden in text it is asked to keep, in several languages.

`looks_like_injection(text)` is true when a text reads like a prompt injection:
an override of earlier instructions, a new role or mode for the assistant, a
request for its prompt or secrets, chat-template tokens. Latin-script
languages (English, German, French, Spanish, Italian, Portuguese, Dutch,
Polish, Croatian, Turkish) are matched in the skeleton (NFKC, marks dropped,
look-alikes folded, casefolded: "Ignoriere", "ignorière" and "іgnore" read
alike, so the patterns are written without diacritics and ß is "ss"); other
scripts (Russian, Chinese, Japanese, Korean) in the casefolded clean text.

The phrases come from public injection corpora and rule sets: the
deepset/prompt-injections dataset (English and German rows), the multilingual
instruction-override lists of public prompt-injection scanners, and the
jailbreak prompts they quote (DAN, developer mode). Every repetition is
bounded, so a scan is linear in the text. A pattern runs only when one of its
words occurs (all of a table's words found in one pass, `literal_trie.Occurring`),
and then only near the literals every match of it holds (`windowed.Scanner`).
The patterns compile on first use, not at import (`roost serve` compiles them
right after it says ready: `bridge.screening.prepare`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from bridge.screening.literal_trie import Occurring
from bridge.screening.unicode_clean import clean, skeleton_of_clean
from bridge.screening.windowed import Scanner

_GAP = r"[^.\n]{0,40}"  # a few words, never past the end of a sentence

_EN = (
    r"\b(?:ignore|disregard|forget|override|bypass|drop|skip)\b[^.\n]{0,40}\b(?:previous|prior"
    r"|above|earlier|preceding|all|any|your|the|system)\b[^.\n]{0,30}\b(?:instructions?|prompts?"
    r"|rules|directions|guidelines|guardrails|messages?|orders|assignments|tasks|commands"
    r"|context|information|documents|articles)\b",
    r"\bforget (?:about )?everything (?:before|above|prior|previous|we discussed|i said"
    r"|you (?:were|have been) told)",
    r"\b(?:ignore|disregard) (?:the |everything )?above\b",
    r"\bnow (?:new|further) (?:tasks|instructions) (?:follow|are followed)",
    r"\byou are now\b",
    r"\b(?:new|updated|revised) (?:system )?instructions?\s{0,3}:",
    r"\bsystem prompt\b",
    r"\bdeveloper mode\b",
    r"\bdo anything now\b",
    r"\bjailbr(?:eak|oken)\b",
    r"<\|?(?:im_start|im_end|system|endoftext)\|?>",
    r"\[/?(?:inst|sys)\]",
    r"</?system>",
    r"\b(?:from now on|henceforth),? (?:you|the assistant) (?:must|will|should|shall|are)\b",
    r"\b(?:reveal|print|show|output|repeat|leak|send)\b[^.\n]{0,30}\b(?:secrets?|vault|api keys?"
    r"|passwords?|your (?:instructions|prompt))\b",
    r"\bpretend (?:that )?you are (?:an? )?(?:evil|unfiltered|uncensored|jailbroken|unrestricted)",
)

_DE = (
    # ignoriere / ignorieren Sie ... (alle) (vorherigen) Anweisungen
    r"\bignorier(?:e|en|t)?\b(?: sie)?" + _GAP + r"\b(?:anweisung(?:en)?|instruktion(?:en)?|befehle"
    r"|regeln|vorgaben|auftrage|aufgaben|angaben|ausfuhrungen|informationen|systemanweisung(?:en)?"
    r"|prompts?|richtlinien|kontext|dokumente|artikel)\b",
    # die obigen Ausführungen ignorieren (object first)
    r"\b(?:die |alle )?(?:obigen?|oben genannten|vorstehenden)\b[^.\n]{0,30}"
    r"\b(?:anweisungen|instruktionen|befehle|regeln|ausfuhrungen|aufgaben|angaben)\b[^.\n]{0,20}"
    r"\b(?:ignorieren|vergessen|missachten|uberschreiben)\b",
    r"\b(?:gehst|bleibst|bleib|bleibe) (?:\w{1,20} ){0,2}in (?:deiner|ihrer) rolle\b",
    # vergiss / vergessen Sie ... alle Aufträge / alles davor / alles, was wir ...
    r"\bvergiss\w{0,2}\b(?: sie)?(?: (?:nun|jetzt|bitte))? (?:alle|deine|die|ihre|samtliche)\b"
    r"[^.\n]{0,30}\b(?:anweisungen|instruktionen|auftrage|aufgaben|regeln|befehle|angaben"
    r"|informationen|vorgaben)\b",
    r"\bvergiss\w{0,2}\b(?: sie)?(?: (?:nun|jetzt|bitte))? alles\b,?"
    r"(?: (?:davor|zuvor|vorher|bisher|bisherige|vorherige|obige|oben|bis hierhin)\b"
    r"| (?:was|das) (?:wir|ich|du|dir|man|ihnen)\b"
    r"| (?:und )?(?:schreib|sag|antworte|gib|zeig|nenn|erzahl|formulier|sprich))",
    r"\b(?:lass|lassen sie) (?:alle )?(?:vorherigen|bisherigen|fruheren) "
    r"(?:informationen|anweisungen|aufgaben) hinter (?:dir|sich)",
    r"\b(?:aus dem kopf (?:zu )?streichen|aus deinem gedachtnis (?:zu )?(?:loschen|streichen))",
    r"\b(?:nun|jetzt|ab jetzt|hier) folgen (?:neue|weitere) (?:anweisungen|aufgaben|auftrage"
    r"|instruktionen|befehle)",
    r"\bneue (?:system)?(?:anweisung(?:en)?|instruktion(?:en)?)\s{0,3}:",
    r"\bkonzentrier(?:e|en|t)? (?:dich|sich|sie) (?:jetzt |nun )?auf "
    r"(?:deine |die |ihre )?neue aufgabe",
    r"\b(?:ab (?:jetzt|sofort)|von nun an),? (?:bist du|wirst du|sollst du|musst du|antwortest du"
    r"|sind sie|werden sie)\b",
    r"\b(?:du bist|sie sind) (?:jetzt|nun|ab jetzt|ab sofort) (?:ein |eine |der |die )?"
    r"(?:\w{1,20} ){0,2}(?:ki|ai|assistent|chatbot|bot|modell|sprachmodell|dan|hacker|terminal"
    r"|interpreter|entwickler)\b",
    r"\b(?:stell dir vor|tu so|tue so|gib vor)\b,?(?: als ob)? (?:du|sie) "
    r"(?:bist|warst|seist|waerst|waren|sind) (?:eine?|der|die)? ?(?:\w{1,20} ){0,2}"
    r"(?:ki|ai|assistent|bot|modell|sprachmodell)\b",
    r"\b(?:system-?prompt|systemanweisung(?:en)?|prompt-?texte?)\b",
    r"\bentwicklermodus\b",
    r"\b(?:ohne|keine) (?:einschrankungen|filter|zensur|regeln)\b[^.\n]{0,30}\b(?:antwort\w{0,3}"
    r"|modus|ki)\b",
    r"\b(?:verrate|zeig|zeige|gib|nenne|schick|sende|druck|wiederhol)\w{0,3}\b[^.\n]{0,30}"
    r"\b(?:passworter|geheimnisse|api-?schlussel|zugangsdaten|tresor|deine anweisungen"
    r"|deinen prompt)\b",
)

_ROMANCE_AND_MORE = (
    # French
    r"\b(?:ignore[rz]?|oublie[rz]?)\b" + _GAP + r"\b(?:instructions?|consignes|regles|directives"
    r"|prompt)\b",
    r"\boublie[rz]? tout\b(?: ce qui precede| ce que| avant)?",
    r"\b(?:nouvelles? (?:consignes|instructions)|instructions? systeme)\s{0,3}:",
    r"\b(?:tu es|vous etes) (?:maintenant|desormais|a partir de maintenant) (?:un |une )?"
    r"(?:\w{1,20} ){0,2}(?:ia|assistant|bot|modele|dan)\b",
    r"\b(?:prompt|invite) (?:systeme|du systeme)\b|\bmode developpeur\b",
    # Spanish
    r"\b(?:ignora[rd]?|olvida[rd]?|olvide)\b" + _GAP + r"\b(?:instrucciones|indicaciones|reglas"
    r"|ordenes|prompt)\b",
    r"\bolvid[aeo]r? todo (?:lo )?(?:que|anterior|lo anterior)\b",
    r"\b(?:nuevas instrucciones|instrucciones del sistema)\s{0,3}:",
    r"\b(?:ahora eres|a partir de ahora eres)\b",
    r"\b(?:prompt del sistema|modo desarrollador)\b",
    # Italian
    r"\b(?:ignora|dimentica)\b" + _GAP + r"\b(?:istruzioni|indicazioni|regole|prompt)\b",
    r"\bdimentica tutto\b",
    r"\b(?:nuove istruzioni)\s{0,3}:|\b(?:ora sei|da ora in poi sei)\b|\bmodalita sviluppatore\b",
    # Portuguese
    r"\b(?:ignore|ignora|esqueca|esquece)\b" + _GAP + r"\b(?:instrucoes|regras|orientacoes"
    r"|prompt)\b",
    r"\b(?:novas instrucoes)\s{0,3}:|\bagora voce e\b|\bmodo desenvolvedor\b",
    # Dutch
    r"\b(?:negeer|vergeet)\b" + _GAP + r"\b(?:instructies|opdrachten|regels|prompt)\b",
    r"\bvergeet alles\b|\bnieuwe instructies\s{0,3}:",
    # Polish, Croatian/Serbian/Bosnian, Turkish
    r"\b(?:zignoruj|zapomnij|ignoruj)\b" + _GAP + r"\b(?:instrukcje|polecenia|zasady|wszystko)\b",
    r"\b(?:zaboravi|ignoriraj|ignorisi)\b" + _GAP + r"\b(?:instrukcije|upute|uputstva|pravila"
    r"|sve)\b",
    r"\b(?:onceki|yukaridaki|tum)\b[^.\n]{0,30}\b(?:talimatlar[iı]|komutlar[iı]|kurallar[iı])\b"
    r"[^.\n]{0,20}\b(?:yok say|unut|gormezden gel|dikkate alma)",
)

_OTHER_SCRIPTS = (
    # Russian (casefolded, Cyrillic kept)
    r"(?:игнорируй|игнорируйте|забудь|забудьте|проигнорируй)[^.\n]{0,40}(?:инструкци|указани"
    r"|правил|промпт|всё|все)",
    r"(?:ты теперь|теперь ты|отныне ты)\b",
    r"системн\w{0,3} (?:промпт|подсказк|инструкци)|режим разработчика",
    # Chinese
    r"(?:忽略|无视|忽视|不要理会|忘记|忘掉)[^。\n]{0,12}(?:指令|指示|说明|提示|规则|设定|要求)",
    r"系统提示|开发者模式|你现在是",
    # Japanese
    r"(?:指示|命令|ルール|プロンプト)[^。\n]{0,12}(?:無視|忘れ)",
    r"システムプロンプト|開発者モード",
    # Korean
    r"(?:지시|명령|규칙|프롬프트)[^.\n]{0,12}(?:무시|잊어)",
    r"시스템 프롬프트|개발자 모드",
)

_WORDS = re.compile(r"[^\W\d_]{2,}")
_ESCAPES = re.compile(r"\\[A-Za-z]")


def _triggers(pattern: str) -> tuple[str, ...]:
    """Every literal word (2+ letters) of a pattern: any match contains at least one.

    A path through a pattern always passes one of its literal words (each
    pattern here is built of words joined by gaps and alternatives), so a text
    that holds none of them cannot match, and the pattern need not run."""
    return tuple(dict.fromkeys(_WORDS.findall(_ESCAPES.sub(" ", pattern))))


_Table = tuple[tuple[tuple[str, ...], Scanner], ...]


def _table(patterns: tuple[str, ...]) -> _Table:
    return tuple((_triggers(p), Scanner(re.compile(p), shipped=True)) for p in patterns)


@cache
def _tables() -> tuple[_Table, _Table]:
    """(Latin-script patterns, other scripts), compiled on first use."""
    return _table((*_EN, *_DE, *_ROMANCE_AND_MORE)), _table(_OTHER_SCRIPTS)


def __getattr__(name: str) -> Any:
    """`PATTERNS`: every compiled pattern (compiled when first asked for)."""
    if name == "PATTERNS":
        latin, other = _tables()
        return tuple(scan.pattern for _, scan in latin + other)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _gate(table: _Table) -> Occurring:
    return Occurring((w for words, _ in table for w in words), shipped=True)


@cache
def _gates() -> tuple[Occurring, Occurring]:
    """The trigger words of each table, found together (compiled on first use)."""
    latin, other = _tables()
    return _gate(latin), _gate(other)


def scanners() -> tuple[Scanner, ...]:
    """Every pattern's scanner, with the tables and their trigger words' gates built."""
    _gates()
    latin, other = _tables()
    return tuple(scan for _, scan in latin + other)


def _any(table: _Table, gate: Occurring, text: str) -> bool:
    # a pattern runs only when one of its words occurs (the table's words are found in
    # one pass, `literal_trie.Occurring`); a pattern with no literal word always runs
    present = gate.present(text)
    return any(
        (not words or not present.isdisjoint(words)) and scan.search(text) is not None
        for words, scan in table
    )


_OTHER_SCRIPT = re.compile(r"[\u0400-\u04ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def looks_like_injection(text: str) -> bool:
    return looks_like_injection_in_clean(clean(text))


def looks_like_injection_in_clean(cleaned: str) -> bool:
    """`looks_like_injection` of a text that is already `clean` (saves a second pass)."""
    latin, other = _tables()
    latin_gate, other_gate = _gates()
    if _any(latin, latin_gate, skeleton_of_clean(cleaned)):
        return True
    if not _OTHER_SCRIPT.search(cleaned):  # no Cyrillic, kana, CJK or Hangul
        return False
    return _any(other, other_gate, cleaned.casefold())

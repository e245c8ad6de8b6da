"""Text that reads otherwise than it runs ("Trojan Source", CVE-2021-42574 and
CVE-2021-42694): the linter's F005 and F006, pure.

A person decides on a tool by reading its code (`/tool show`, the consent
prompt), which shows the source as it is. Three tricks make that reading lie:
- **bidirectional controls** (UAX #9 embeddings, overrides and isolates),
  written raw anywhere, reorder what a bidi-aware view (Telegram, a browser, a
  terminal) shows of a line: a comment shows as code and code as a comment;
- **invisible format characters** (Unicode category Cf: zero width space, word
  joiner, soft hyphen, tag characters, ...) make `"yes"` and `"ye\\u200bs"`
  look the same, so a check shown as matching never does;
- **homoglyph identifiers**: `сonfirmed` (Cyrillic с) is another variable than
  `confirmed` and looks exactly like it.
F005 refuses the first two anywhere in the text, F006 an identifier that is not
ASCII after Python's own NFKC folding (a fullwidth `ｘ` folds to `x`, the same
name, and passes). Allowed, as in rustc: the marks LRM, RLM and ALM (they only
lean the characters next to them) and the joiners ZWNJ and ZWJ (Persian and
Indic words, emoji sequences). A tool that needs any other of them writes its
escape (`"\\u200b"`) inside a string. `escape_hidden` shows them as escapes in
text the model gives beside the source (a tool's description).
"""

from __future__ import annotations

import ast
import unicodedata

from forge.findings import Finding

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ALLOWED_FORMAT = frozenset("\u061c\u200e\u200f\u200c\u200d")  # marks and joiners
MAX_FINDINGS = 5
# the AST fields that hold an identifier (or a list of them)
_NAME_FIELDS = ("id", "attr", "name", "arg", "asname", "rest")
_NAME_LISTS = ("names", "kwd_attrs")


def hidden(char: str) -> bool:
    """A character that reorders or hides text: a bidi control or another Cf."""
    return char in BIDI_CONTROLS or (
        char not in ALLOWED_FORMAT and unicodedata.category(char) == "Cf"
    )


def escape_hidden(text: str) -> str:
    """`text` with each hidden character as its escape (`\\u202e`)."""
    return "".join(_escape(c) if hidden(c) else c for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def hidden_findings(source: str) -> list[Finding]:
    """One F005 for each hidden character (the first few), by line and column."""
    if source.isascii():
        return []
    found = []
    for number, line in enumerate(source.split("\n"), start=1):  # as Python counts lines
        for col, char in enumerate(line):
            if not hidden(char):
                continue
            what = "bidirectional control" if char in BIDI_CONTROLS else "invisible character"
            found.append(
                Finding(
                    number,
                    col,
                    "F005",
                    f"raw {what} U+{ord(char):04X} in the source: it makes the code read "
                    "otherwise than it runs (Trojan Source); remove it, or write it as the "
                    f'escape "{_escape(char)}" inside a string',
                )
            )
            if len(found) == MAX_FINDINGS:
                return found
    return found


def identifier_findings(tree: ast.AST, source: str) -> list[Finding]:
    """One F006 for each identifier that is not ASCII (the first few)."""
    if source.isascii():
        return []
    found = []
    for node in ast.walk(tree):
        names = [getattr(node, f, None) for f in _NAME_FIELDS]
        for field in _NAME_LISTS:
            value = getattr(node, field, None)
            if isinstance(value, list):
                names += value
        for name in names:
            if isinstance(name, str) and not name.isascii():
                others = "".join(dict.fromkeys(c for c in name if not c.isascii()))
                found.append(
                    Finding(
                        getattr(node, "lineno", 1),
                        getattr(node, "col_offset", 0),
                        "F006",
                        f"name {name!r} holds letters that are not ASCII ({others!r}): one "
                        "can look exactly like a Latin letter and be another name "
                        "(homoglyph); use ASCII names",
                    )
                )
                if len(found) == MAX_FINDINGS:
                    return found
    return found

"""The one front-matter reader: `---` fenced `key: value` lines at the top of a text file.

Memory topics (`memory/<type>_<slug>.md`) and skills (`skills/<name>.md`)
both start with

    ---
    key: value
    ---
    body

`split` returns the fields and the body, or None when the text does not
open with a fence or the fence is never closed (so a half-written file is
not mistaken for one without front matter). A closing fence is a line that
is exactly `---`. Values are kept as written; `unquote` strips surrounding
quote marks for files people write by hand (YAML habit).
"""

from __future__ import annotations

from dataclasses import dataclass

FENCE = "---"


@dataclass(frozen=True, slots=True)
class FrontMatter:
    fields: dict[str, str]
    body: str

    def unquoted(self) -> dict[str, str]:
        return {key: unquote(value) for key, value in self.fields.items()}


def split(text: str) -> FrontMatter | None:
    """Fields and body of `text`; None without an opening and a closing fence."""
    if not text.startswith(FENCE + "\n"):
        return None
    closing = "\n" + FENCE
    end = text.find(closing + "\n", len(FENCE))  # from the opening's newline: "---\n---\n" is empty
    if end < 0:
        if not text.endswith(closing) or len(text) < 2 * len(FENCE) + 1:
            return None
        end = len(text) - len(closing)
    found: dict[str, str] = {}
    for line in text[len(FENCE) + 1 : end].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            found[key.strip()] = value.strip()
    return FrontMatter(found, text[end + len(closing) + 1 :])


def unquote(value: str) -> str:
    """Surrounding quote marks dropped: `"a b"` or `'a b'` -> `a b`."""
    return value.strip("\"'")


def fields(text: str) -> dict[str, str]:
    """The unquoted front-matter fields of `text`; {} without front matter."""
    found = split(text)
    return found.unquoted() if found is not None else {}

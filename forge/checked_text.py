"""`string.Template` and `re.escape` as a tool gets them: library code never hands
its internals to a method the tool wrote.

The guards judge what an attribute lookup returns (forge.policy.verdict), not
what library code passes to a tool's method or returns from a call. Two such
routes (an attacker pass, atk2 F1):

- `Template.substitute` and `safe_substitute` call `self.pattern.sub(convert,
  self.template)`; a tool subclass set `T.pattern` to its own object after the
  class was made and received `convert`, a closure of string.py. A tool's
  `Template` reads `pattern` once and uses it only if it is exactly an
  `re.Pattern`; `convert` is this module's own and goes only to the real
  `Pattern.sub`. (`is_valid` and `get_identifiers` give the pattern only the
  tool's own template, and are left as they are.)
- `re.escape(s)` calls `s.translate(re._special_chars_map)`: a tool `str`
  subclass overriding `translate` received the real module-global table, and
  could rewrite it for every later `re.escape` of the call. A tool's `escape`
  hands the real one an exact `str` (or `bytes`) copy; `Template`'s
  `__init_subclass__` builds a subclass's pattern from exact copies of its
  `delimiter`, `idpattern`, `braceidpattern`, `flags` and own `pattern`, so no
  tool method runs inside `re.escape` or `re.compile` there either.

Refusals are `TypeError`s the tool may catch.
"""

from __future__ import annotations

import re
import string
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

_NO_MAPPING: Mapping[str, Any] = {}


def _text(value: object, what: str) -> str:
    """An exact `str` copy of `value` (`str.__str__` runs no method of a subclass);
    TypeError for anything else."""
    if not isinstance(value, str):
        raise TypeError(f"Template: {what} must be a str, not {type(value).__name__}")
    return str.__str__(value)


def escape(pattern: Any, /) -> Any:
    """`re.escape` of an exact copy of `pattern` (a `str`, `bytes` or `bytearray`)."""
    if isinstance(pattern, str):
        return re.escape(str.__str__(pattern))
    if isinstance(pattern, bytes):
        return re.escape(bytes.__bytes__(pattern))
    if isinstance(pattern, bytearray):
        return re.escape(bytes(bytearray.copy(pattern)))
    raise TypeError(f"escape: expects a str or bytes, not {type(pattern).__name__}")


def _pattern(template: string.Template, what: str) -> re.Pattern[str]:
    """`template.pattern`, read once, if it is exactly a compiled pattern."""
    found = template.pattern
    if type(found) is not re.Pattern:
        raise TypeError(
            f"Template.{what}: pattern must be a compiled re.Pattern (re.compile(...)), "
            f"not {type(found).__name__}"
        )
    return found


def _mapping(mapping: Mapping[str, Any], kws: dict[str, Any]) -> Mapping[str, Any]:
    if mapping is _NO_MAPPING:
        return kws
    return ChainMap(kws, mapping) if kws else mapping  # type: ignore[arg-type]


class Template(string.Template):
    """`string.Template` whose pattern is always a real `re.Pattern` built from
    exact strings, and whose substitution callback stays inside forge."""

    def __init_subclass__(cls) -> None:
        super(string.Template, cls).__init_subclass__()  # not string.Template's: below
        own = type.__dict__["__dict__"].__get__(cls)
        found_flags: object = cls.flags
        if not isinstance(found_flags, int):
            raise TypeError(f"Template: flags must be an int, not {type(found_flags).__name__}")
        flags = int.__int__(found_flags)  # an exact int, whatever a subclass would answer
        if "pattern" in own:
            found = own["pattern"]
            pattern: str | re.Pattern[str] = (
                found if type(found) is re.Pattern else _text(found, "pattern")
            )
        else:
            delim = re.escape(_text(cls.delimiter, "delimiter"))
            ident = _text(cls.idpattern, "idpattern")
            brace = cls.braceidpattern
            bid = ident if brace is None else _text(brace, "braceidpattern") or ident
            pattern = rf"""
            {delim}(?:
              (?P<escaped>{delim})  |   # Escape sequence of two delimiters
              (?P<named>{ident})    |   # delimiter and a Python identifier
              {{(?P<braced>{bid})}} |   # delimiter and a braced identifier
              (?P<invalid>)             # Other ill-formed delimiter exprs
            )
            """
        cls.pattern = re.compile(pattern, flags | re.VERBOSE)

    def substitute(self, mapping: Mapping[str, Any] = _NO_MAPPING, /, **kws: Any) -> str:
        """`string.Template.substitute`, through a checked pattern."""
        pattern = _pattern(self, "substitute")
        values = _mapping(mapping, kws)

        def convert(mo: re.Match[str]) -> str:
            named = mo.group("named") or mo.group("braced")
            if named is not None:
                return str(values[named])
            if mo.group("escaped") is not None:
                return str(self.delimiter)
            if mo.group("invalid") is not None:
                string.Template._invalid(self, mo)  # type: ignore[attr-defined]
            raise ValueError("Unrecognized named group in pattern", pattern)

        return _sub(pattern, convert, self.template)

    def safe_substitute(self, mapping: Mapping[str, Any] = _NO_MAPPING, /, **kws: Any) -> str:
        """`string.Template.safe_substitute`, through a checked pattern."""
        pattern = _pattern(self, "safe_substitute")
        values = _mapping(mapping, kws)

        def convert(mo: re.Match[str]) -> str:
            named = mo.group("named") or mo.group("braced")
            if named is not None:
                try:
                    return str(values[named])
                except KeyError:
                    return mo.group()
            if mo.group("escaped") is not None:
                return str(self.delimiter)
            if mo.group("invalid") is not None:
                return mo.group()
            raise ValueError("Unrecognized named group in pattern", pattern)

        return _sub(pattern, convert, self.template)


def _sub(pattern: re.Pattern[str], convert: Callable[[re.Match[str]], str], text: Any) -> str:
    """The real `Pattern.sub` (C code: it calls `convert` with its own matches only)."""
    return pattern.sub(convert, text)


CHECKED_TEXT: dict[tuple[str, str], Any] = {
    ("string", "Template"): Template,
    ("re", "escape"): escape,
}

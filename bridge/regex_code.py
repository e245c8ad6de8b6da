"""A cache of compiled regular expressions, kept across processes like `.pyc` files.

Python compiles a pattern with a compiler written in Python (`re._parser`,
`re._compiler`), and only caches the result for the life of the process. A
`roost` process compiles about 270 patterns at import (`roost send /help`)
to 450 (`roost serve`, a message): 30-60 ms of CPU in every daemon and every
CLI command, a sixth of `roost send /help` (measured by `bench/startup.py`),
a quarter of it in `bridge/grading/cues.py` alone.

`install()` (run by `bridge/__init__.py`, first) wraps the stdlib's private
`re._compiler.compile`: what it hands `_sre.compile` (the final flags, the
code list, the group count and names) is kept, by the pattern's type, text
and flags, in `__pycache__/regex-code.<cache tag>.marshal` beside this file,
and the next process calls `_sre.compile` with it directly, so the pattern
object is the one the stdlib would make.

Only constant patterns are kept: those compiled by a module's top-level code
while an import runs it (or as the program itself; not the top level of a text
given to `exec`) (`re.compile(...)` at module level, or in a
comprehension there), by the body of a class defined there (`logging`'s,
`textwrap`'s, pydantic's class attributes), and by the few functions listed
in `_CONSTANT_SITES`, each read and found to compile only patterns written in
its source or built from such (python-dotenv's `make_regex`,
argparse's), or from roost's shipped rule file (the screens:
`rule_data._compile`, `rule_data.load`, `secret_context._names`,
`injection._table`, and `literal_trie.compile_shipped`, which only a
`Scanner`, `Keywords` or `Occurring` made with `shipped=True` calls; made
otherwise, they compile with `re.compile`), and the grading's phrase
patterns grouped by first word (`cues._phrase_starts`). Any other pattern compiled
inside a function may be built from what a person sent or from a secret (the
log redactor's), so it is compiled as before and never written down.

It stays out of the way whenever it cannot be exact or safe:
- only on the Python versions whose `re` internals it mirrors (3.11);
- a pattern whose compilation could warn (a set opening with `[[`, a `--`, `&&`,
  `~~` or `||` inside a set, a conditional group, a non-ASCII bytes pattern; in a
  verbose pattern, whose comments may hold a `[`, any of these anywhere) is
  compiled as before, so its warning is never lost to a cache hit (`may_warn`);
- nothing is written when byte-code writing is off (`PYTHONDONTWRITEBYTECODE`,
  `sys.dont_write_bytecode`) or the folder is not writable;
- at most 4,000 patterns are kept: past that, a process writes only the
  patterns it used (so patterns edited away do not fill the file for good);
- the file is tied to the interpreter's version and build and to `_sre`'s
  magic number and code size; a file that does not load is ignored (and
  rewritten).
The file has the trust of the `.pyc` files beside it; it is written
atomically (temporary file, rename), as `bridge.dataclass_code` writes its own.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # the regex engine: no stub
import atexit
import marshal
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from bridge.dataclass_code import KeptEntries, cache_path

_VERSIONS = ((3, 11),)
_MAX = 4_000  # patterns kept (roost compiles about 450 at import)
_MAY_WARN = ("[[", "--", "&&", "~~", "||", "(?(")  # re._parser's FutureWarning/DeprecationWarning
_DOUBLED = "-&~|"  # a set's `--`, `&&`, `~~`, `||`: re._parser's "Possible set ..." warnings
_INLINE_FLAGS = frozenset("aiLmsux-")
_INNER = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
_FUNCTION = 0x1 | 0x2  # CO_OPTIMIZED | CO_NEWLOCALS: set for functions, not class bodies
# Functions (module, qualified name) whose every pattern is constant: literals in their
# source, or built only from such. A function lands here only after its source was read
# (the pinned version's); one that may see a person's text or a secret never does.
_CONSTANT_SITES = frozenset(
    {
        ("dotenv.parser", "make_regex"),  # called only by the module's top-level constants
        ("argparse", "_ActionsContainer.__init__"),  # the negative-number matcher, a literal
        ("argparse", "HelpFormatter.__init__"),  # two whitespace literals
        # the nargs patterns of the parser's own actions (letters A, O and -), never argv's text
        ("argparse", "ArgumentParser._match_arguments_partial"),
        # the audit's identity and message-id patterns with each platform's (module constants)
        ("bridge.audit.schema", "_union"),
        # the secret rules of the shipped `secret_rules.toml` (read by `rule_set`, package data)
        ("bridge.screening.rule_data", "_compile"),
        # the same file's named rules' values, as `load` reads them
        ("bridge.screening.rule_data", "load"),
        # its services' names, one alternation per named rule (`rule_set()` only)
        ("bridge.screening.secret_context", "_names"),
        # the screens' patterns made from shipped rules and tables only: the keyword gate
        # and word tries made `shipped=True`, what a `Scanner(..., shipped=True)` reads
        ("bridge.screening.literal_trie", "compile_shipped"),
        # the injection screen's patterns (module constants `_EN`, `_DE`, ...)
        ("bridge.screening.injection", "_table"),
        # the grading's phrase patterns, grouped by their first word (module constants)
        ("bridge.grading.cues", "_phrase_starts"),
    }
)

# Modules whose top-level patterns are built from sets: their text follows the order the
# string hash seed gives each process (email's `''.join(WSP)`, `ATOM_ENDS`, ...), so each
# process would add new ones and write the file again at its exit. Never kept.
# (`tokenize._compile` is given such a pattern too: its string prefixes come from a set;
# it was a constant site while the rule above, a `||` anywhere, happened to refuse most
# of its orders.)
_UNSTABLE_MODULES = frozenset({"email._header_value_parser"})

Key = tuple[bool, str | bytes, int]  # (is text, pattern, flags)
Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


def _header() -> bytes:
    return f"roost-regex 2|{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}\n".encode()


class _Cache(KeptEntries):
    """What `_sre.compile` was given, by pattern (Key -> Entry); saves itself at exit
    when it grew, past `_MAX` patterns only those this process used.

    The file holds each entry marshalled on its own (`stored`), decoded when its pattern
    is first compiled (`entry`): a process reads the whole file as bytes but builds the
    code lists of its own patterns only (`roost send` compiles about 270 of 1,200 kept;
    decoding them all cost about 30 M instructions, 8 ms, in every process)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, _header(), _MAX)

    def entry(self, key: Key) -> Entry | None:
        """The kept entry of `key`, decoded; None when there is none or it does not load
        (then it is dropped, and the pattern compiled and kept again)."""
        found = self.entries.get(key)
        if isinstance(found, bytes):
            found = _decoded(found)
            if found is None:
                del self.entries[key]
            else:
                self.entries[key] = found
        return found

    def stored(self, value: Any) -> Any:
        return value if isinstance(value, bytes) else marshal.dumps(value)


def _decoded(data: bytes) -> Entry | None:
    """A marshalled entry, or None when it does not load or is not of an entry's shape."""
    try:
        value = marshal.loads(data)
    except Exception:  # damaged: EOFError, ValueError, TypeError, SystemError
        return None
    if not (isinstance(value, tuple) and len(value) == 5):
        return None
    final, code, groups, groupindex, indexgroup = value
    if not (
        type(final) is int
        and type(code) is list
        and type(groups) is int
        and type(groupindex) is dict
        and type(indexgroup) is tuple
    ):
        return None
    return value


def cacheable(pattern: object, flags: int = 0) -> bool:
    """A pattern whose compilation cannot warn (so a cache hit loses nothing), of a type
    `marshal` writes (exactly `str` or `bytes`, no subclass)."""
    if type(pattern) is bytes:
        if not pattern.isascii():
            return False
        text = pattern.decode("ascii")
    elif type(pattern) is str:
        text = pattern
    else:
        return False
    return not may_warn(text, flags)


def may_warn(text: str, flags: int = 0) -> bool:
    """Whether Python 3.11's `re._parser` could warn compiling `text`: a set (`[...]`)
    whose first character is `[`, a doubled `-`, `&`, `~` or `|` inside a set, a
    conditional group `(?(`. The sets are found as the parser finds them: a backslash
    and the character after it are one item, a `]` right after `[` or `[^` is a
    character, any later one closes the set. A comment (`(?#...)`, or `#` in a verbose
    pattern) may hold a `[` the parser skips, so with one any of `_MAY_WARN` anywhere
    counts (the former rule)."""
    if "(?(" in text:
        return True
    if "(?#" in text or flags & re.VERBOSE or _verbose_inline(text):
        return any(bad in text for bad in _MAY_WARN)
    inside = first = False
    i, end = 0, len(text)
    while i < end:
        c = text[i]
        if c == "\\":
            first = False
            i += 2
            continue
        if not inside:
            if c == "[":
                if text.startswith("[", i + 1):
                    return True
                inside = first = True
                i += 2 if text.startswith("^", i + 1) else 1
                continue
        elif c == "]" and not first:
            inside = False
        elif c in _DOUBLED and text.startswith(c, i + 1):
            return True
        else:
            first = False
        i += 1
    return False


def _verbose_inline(text: str) -> bool:
    """An inline flag group turning on `x` (verbose) anywhere: `(?x)`, `(?ix:...)`."""
    start = text.find("(?")
    while start != -1:
        i = start + 2
        while i < len(text) and text[i] in _INLINE_FLAGS:
            if text[i] == "x":
                return True
            i += 1
        start = text.find("(?", start + 2)
    return False


def at_module_level(frame: FrameType | None) -> bool:
    """The frame that called `re` (skipping `re` itself and comprehensions) is a
    module's top-level code, the body of a class defined there (or in such a class), or
    one of the `_CONSTANT_SITES`."""
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "re":
        frame = frame.f_back
    while frame is not None and frame.f_code.co_name in _INNER:
        frame = frame.f_back
    if frame is None:
        return False
    site = (frame.f_globals.get("__name__", ""), frame.f_code.co_qualname)
    if site[0] in _UNSTABLE_MODULES:
        return False
    if site in _CONSTANT_SITES:
        return True
    while frame is not None and _class_body(frame):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_name == "<module>" and _imported(frame)


def _imported(frame: FrameType) -> bool:
    """A module's top-level code run by an import (importlib's loaders), as the program
    (`python -m`, a script), not by an `exec` of some text elsewhere: that text's
    top-level code is a `<module>` too, and may be built from anything."""
    caller = frame.f_back
    if caller is None:  # the program's own top level (a script, `-c`)
        return True
    code = caller.f_code
    if code.co_filename == "<frozen importlib._bootstrap>":
        return code.co_name == "_call_with_frames_removed"
    return code.co_name == "_run_code" and caller.f_globals.get("__name__") == "runpy"


def _class_body(frame: FrameType) -> bool:
    """A class statement's body running (neither a function nor a module's code)."""
    code = frame.f_code
    return not code.co_flags & _FUNCTION and code.co_name != "<module>"


def _compiler_wrapper(cache: _Cache, original: Callable[..., Any]) -> Callable[..., Any]:
    def compile(p: Any, flags: int = 0) -> Any:
        if not isinstance(p, (str, bytes)) or flags & re.DEBUG:
            return original(p, flags)
        key: Key = (isinstance(p, str), p, int(flags))
        found = cache.entry(key)
        if found is not None:
            cache.used.add(key)
            final, code, groups, groupindex, indexgroup = found
            return _sre.compile(p, final, code, groups, groupindex, indexgroup)
        entry = _entry(p, flags)
        made = _sre.compile(p, *entry)
        if cacheable(p, flags) and at_module_level(sys._getframe(1)):
            cache.entries[key] = entry
            cache.used.add(key)
            cache.added += 1
        return made

    return compile


def _entry(p: str | bytes, flags: int) -> Entry:
    """What `re._compiler.compile` hands `_sre.compile` for `p`, by its own steps
    (a pattern without `re.DEBUG`)."""
    compiler = re._compiler  # type: ignore[attr-defined]
    parsed = compiler._parser.parse(p, flags)
    code = [int(op) for op in compiler._code(parsed, flags)]  # opcodes are int subclasses
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    final = int(flags | parsed.state.flags)
    return final, code, int(parsed.state.groups - 1), groupindex, tuple(indexgroup)


def install(folder: Path | None = None) -> bool:
    """Wrap `re._compiler.compile` with the cache; False where it does not apply."""
    compiler = getattr(re, "_compiler", None)
    if sys.version_info[:2] not in _VERSIONS or compiler is None:
        return False
    if getattr(compiler.compile, "__roost_cached__", False):
        return True
    cache = _Cache(cache_path(folder, "regex-code"))
    wrapper = _compiler_wrapper(cache, compiler.compile)
    wrapper.__roost_cached__ = True  # type: ignore[attr-defined]
    compiler.compile = wrapper
    atexit.register(cache.save)
    return True

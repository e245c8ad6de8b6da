"""The compiled-pattern cache: equal patterns, constants only, a file that outlives the process."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import sys
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, overload

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge import regex_code
from tests.fresh import env_without, python_c

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="the cache applies to Python 3.11 only"
)

# A spread of what patterns use: groups (named and not), flags inline and passed,
# classes, Unicode, bytes, look-arounds, back-references, repeats.
SPREAD: list[tuple[str | bytes, int]] = [
    (r"(?P<key>[a-z_]+)\s*=\s*(?P<value>\S+)", 0),
    (r"\b(no|kein) (problem|worries|sorge)\b", 0),
    (r"(?i)grüße|straße", 0),
    (r"^\W*(no|nein|nö)\b(?!\s+(problem|worries))", re.IGNORECASE | re.MULTILINE),
    (r"(\w+) \1", 0),
    (r"[^.!?;,:\n]+[.!?;,:\n]*", 0),
    (r"(?s)<think>.*?</think>", 0),
    (r"\d{3,}(?:-\d{2})?|[\U0001F300-\U0001FAFF]+", re.VERBOSE),
    (rb"\x00[\x01-\x7f]{2,8}(?P<tail>ab|cd)$", 0),
    (rb"(?i)content-type:\s*([^;\r\n]+)", 0),
]
SAMPLES = [
    "key = value",
    "no problem at all",
    "GRÜSSE aus der Straße",
    "nope, no worries\nno thanks",
    "the the cat",
    "First. Second! Third?",
    "a <think>x\ny</think> b",
    "call 555-12 now 🎉🎉",
]


@pytest.fixture(autouse=True)
def bytecode_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-code writing on, as `make test` runs (PYTHONDONTWRITEBYTECODE may be set here)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


@overload
def unique(pattern: str) -> str: ...
@overload
def unique(pattern: bytes) -> bytes: ...
def unique(pattern: str | bytes) -> str | bytes:
    """`pattern` with a fresh comment after it: never in `re`'s own per-process cache."""
    tag = f"(?#{uuid.uuid4().hex})"
    if isinstance(pattern, bytes):
        return pattern + tag.encode()
    return pattern + tag


@pytest.fixture
def wrapped(tmp_path: Path) -> Iterator[regex_code._Cache]:
    """`re` compiling through a cache of its own in tmp_path, as `install()` makes it."""
    compiler: Any = re._compiler  # type: ignore[attr-defined]
    installed = compiler.compile
    cache = regex_code._Cache(tmp_path / "regex.marshal")
    compiler.compile = regex_code._compiler_wrapper(cache, _stdlib_compile())
    try:
        yield cache
    finally:
        compiler.compile = installed


# A fresh process's `re` compiling through a cache of the file argv[1] (as the fixture
# `wrapped` does here): what the probe that follows compiles is kept there, or read.
WRAPPED_PROBE = (
    "import re, sys\n"
    "from pathlib import Path\n"
    "from bridge import regex_code\n"
    "cache = regex_code._Cache(Path(sys.argv[1]))\n"
    "re._compiler.compile = regex_code._compiler_wrapper(cache, re._compiler.compile)\n"
)


def _stdlib_compile() -> Any:
    spec = importlib.util.find_spec("re._compiler")
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh.compile


def run_as_module(source: str, name: str = "probe", **names: object) -> dict[str, Any]:
    """`source` imported as module `name` (importlib's file loader runs its top-level
    code, as any import does), `names` in its namespace first."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "probe.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(names)
        spec.loader.exec_module(module)
    return module.__dict__


def test_the_top_level_of_exec_text_is_not_a_module(
    wrapped: regex_code._Cache, tmp_path: Path
) -> None:
    """Text given to `exec` inside a function has a `<module>` top level too, but it may
    be built from anything (a person's words, a secret): what it compiles is not kept,
    while the same source imported is."""
    secret = f"sk-{uuid.uuid4().hex}"

    def run(text: str) -> dict[str, Any]:
        namespace: dict[str, Any] = {"__name__": "probe"}
        exec(compile(text, "<text>", "exec"), namespace)
        return namespace

    made = run(f"import re\nx = re.compile({secret!r})\n")
    assert made["x"].search(f"a {secret} b")
    constant = unique("imported-[a-z]+")
    run_as_module(f"import re\nx = re.compile({constant!r})\n")
    wrapped.save()
    kept = (tmp_path / "regex.marshal").read_bytes()
    assert secret.encode() not in kept
    assert [key[1] for key in wrapped.entries] == [constant]


def test_patterns_from_the_cache_equal_the_stdlibs(wrapped: regex_code._Cache) -> None:
    stdlib = _stdlib_compile()
    spread = [(unique(p), f) for p, f in SPREAD]
    source = "import re\nmade = [re.compile(p, f) for p, f in spread]"
    first = run_as_module(source, "m1", spread=spread)
    assert wrapped.added == len(spread)  # module level, in a comprehension: all kept
    re.purge()
    again = run_as_module(source, "m2", spread=spread)
    assert wrapped.added == len(spread)  # every one came from the cache
    for (pattern, flags), a, b in zip(spread, first["made"], again["made"], strict=True):
        plain = stdlib(pattern, flags)
        assert a == plain and b == plain  # Pattern equality compares the compiled code
        assert (b.flags, b.groups, b.groupindex) == (plain.flags, plain.groups, plain.groupindex)
        for text in SAMPLES:
            subject: Any = text.encode() if isinstance(pattern, bytes) else text
            assert [m.span() for m in b.finditer(subject)] == [
                m.span() for m in plain.finditer(subject)
            ]


def test_a_pattern_compiled_inside_a_function_is_never_kept(
    wrapped: regex_code._Cache, tmp_path: Path
) -> None:
    """A function may build a pattern from a secret (the log redactor does): not written down."""
    secret = f"sk-{uuid.uuid4().hex}"
    made = run_as_module(
        "import re\n"
        "def redactor(values):\n"
        "    return re.compile('|'.join(re.escape(v) for v in values))\n"
        f"top = re.compile({unique('const-[a-z]+')!r})\n"
    )
    assert made["redactor"]([secret]).search(f"key {secret} here")
    wrapped.save()
    kept = (tmp_path / "regex.marshal").read_bytes()
    assert secret.encode() not in kept
    assert b"const-[a-z]+" in kept  # the module's constant
    assert [key[1] for key in wrapped.entries] == [made["top"].pattern]


def test_a_module_whose_patterns_follow_the_hash_seed_keeps_none(
    wrapped: regex_code._Cache,
) -> None:
    """email's header parser joins sets into its top-level patterns, so their text differs
    from process to process: kept, they would grow the file and rewrite it at every exit."""
    made = run_as_module(
        "import re\nWSP = set(' \\t')\nsplitter = re.compile(r'([{}]+)'.format(''.join(WSP)))\n",
        name="email._header_value_parser",
    )
    assert made["splitter"].split("a \tb") == ["a", " \t", "b"]  # compiled as ever
    steady = unique("steady-[a-z]+")
    run_as_module(f"import re\nre.compile({steady!r})\n", name="steady")
    assert [key[1] for key in wrapped.entries] == [steady]


def test_email_imported_in_a_fresh_process_keeps_none_of_its_header_patterns(
    tmp_path: Path,
) -> None:
    probe = (
        WRAPPED_PROBE + "sys.modules.pop('email._header_value_parser', None)\n"
        "import email._header_value_parser as parser\n"
        "print(repr(parser._wsp_splitter.__self__.pattern))\n"
        "print(repr(sorted(str(key[1]) for key in cache.entries)))\n"
    )
    out = python_c(probe, str(tmp_path / "regex.marshal")).stdout.splitlines()
    splitter, kept = ast.literal_eval(out[0]), ast.literal_eval(out[1])
    assert splitter in ("([ \t]+)", "([\t ]+)")
    assert splitter not in kept and not [p for p in kept if p.endswith("><]+")]


def test_a_pattern_that_warns_still_warns_in_the_next_process(wrapped: regex_code._Cache) -> None:
    pattern = unique("[[a-z]]")
    for _ in range(2):
        re.purge()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            run_as_module(f"import re\nx = re.compile({pattern!r})")
        assert [w.category for w in seen] == [FutureWarning]
    assert wrapped.added == 0


def test_the_file_is_read_by_the_next_process_and_tied_to_the_interpreter(
    tmp_path: Path, wrapped: regex_code._Cache
) -> None:
    pattern = unique(r"(?P<word>\w+)-(\d+)")
    run_as_module(f"import re\nx = re.compile({pattern!r})")
    wrapped.save()
    path = tmp_path / "regex.marshal"
    assert path.read_bytes().startswith(regex_code._header())
    assert not list(tmp_path.glob("*.tmp"))
    probe = (
        WRAPPED_PROBE + "x = re.compile(sys.argv[2])\n"
        "print(cache.added, x.groupindex, x.match('ab-12').groups())\n"
    )
    out = python_c(probe, str(path), pattern, env=env_without("PYTHONDONTWRITEBYTECODE")).stdout
    assert out.split(" ", 1)[0] == "0"  # compiled from the file, nothing added
    assert "{'word': 1}" in out
    path.write_bytes(b"roost-regex 1|another python\n" + path.read_bytes().split(b"\n", 1)[1])
    assert regex_code._Cache(path).entries == {}  # another interpreter's file: ignored


@pytest.mark.parametrize("content", [b"", b"garbage", regex_code._header() + b"\x00\x01"])
def test_a_damaged_file_is_ignored(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "regex.marshal").write_bytes(content)
    assert regex_code._Cache(tmp_path / "regex.marshal").entries == {}


def test_nothing_is_written_when_byte_code_writing_is_off(
    wrapped: regex_code._Cache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_as_module(f"import re\nx = re.compile({unique('off[0-9]')!r})")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    wrapped.save()
    assert not (tmp_path / "regex.marshal").exists()


def test_roost_installs_it_and_keeps_its_modules_constant_patterns() -> None:
    """`import bridge` wraps `re`; a roost module's top-level patterns are in the cache
    (loaded from the file or added by this process, to be written at its exit)."""
    import bridge.grading.cues as cues

    wrapper: Any = re._compiler.compile  # type: ignore[attr-defined]
    assert getattr(wrapper, "__roost_cached__", False)
    [cache] = [
        c.cell_contents
        for c in wrapper.__closure__
        if isinstance(c.cell_contents, regex_code._Cache)
    ]
    assert cache.path == Path(regex_code.__file__).parent / "__pycache__" / (
        f"regex-code.{sys.implementation.cache_tag}.marshal"
    )
    for pattern, _, _ in cues._PHRASES:
        assert (True, pattern.pattern, pattern.flags & ~re.UNICODE) in cache.entries


def test_past_its_bound_the_file_keeps_only_what_the_last_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "regex.marshal"
    compiler: Any = re._compiler  # type: ignore[attr-defined]
    installed = compiler.compile
    monkeypatch.setattr(regex_code, "_MAX", 3)

    def one_process(patterns: list[str]) -> regex_code._Cache:
        cache = regex_code._Cache(path)
        compiler.compile = regex_code._compiler_wrapper(cache, _stdlib_compile())
        try:
            re.purge()
            run_as_module("import re\nmade = [re.compile(p) for p in patterns]", patterns=patterns)
        finally:
            compiler.compile = installed
        cache.save()
        return cache

    old = [unique(f"old{i}-[a-z]") for i in range(3)]
    one_process(old)
    assert len(regex_code._Cache(path).entries) == 3
    new = [unique("new-[0-9]+"), old[0]]
    cache = one_process(new)
    assert cache.added == 1  # old[0] came from the file
    assert {key[1] for key in regex_code._Cache(path).entries} == set(new)


def test_a_pattern_of_a_str_subclass_is_compiled_but_not_kept(
    wrapped: regex_code._Cache, tmp_path: Path
) -> None:
    """`marshal` cannot write a subclass of str: one such pattern must not spoil the file."""

    class Text(str):
        pass

    pattern = Text(unique("sub-[a-z]+"))
    made = run_as_module(
        "import re\nx = re.compile(p)\ny = re.compile(q)", p=pattern, q=unique("k")
    )
    assert made["x"].match("sub-abc")
    wrapped.save()
    assert [key[1] for key in regex_code._Cache(tmp_path / "regex.marshal").entries] == [
        made["y"].pattern
    ]


def test_a_class_body_at_module_level_is_kept_a_class_in_a_function_is_not(
    wrapped: regex_code._Cache,
) -> None:
    """`logging`'s and `textwrap`'s class attributes are constants; a class built by a
    function may hold what the function was given."""
    outer, nested, local, method = (unique(f"{n}-[0-9]+") for n in "ABCD")
    made = run_as_module(
        "import re\n"
        "class Outer:\n"
        "    attr = re.compile(OUTER)\n"
        "    class Nested:\n"
        "        attr = re.compile(NESTED)\n"
        "    def method(self, value):\n"
        "        return re.compile(value)\n"
        "def factory(value):\n"
        "    class Local:\n"
        "        attr = re.compile(value)\n"
        "    return Local\n",
        OUTER=outer,
        NESTED=nested,
    )
    made["factory"](local)
    made["Outer"]().method(method)
    assert sorted(key[1] for key in wrapped.entries) == sorted([outer, nested])


def test_only_the_listed_functions_are_constant_sites(wrapped: regex_code._Cache) -> None:
    listed, elsewhere = unique("listed-[a-z]+"), unique("elsewhere-[a-z]+")
    source = "import re\ndef make_regex(string):\n    return re.compile(string)\n"
    run_as_module(source, "dotenv.parser")["make_regex"](listed)
    run_as_module(source, "probe")["make_regex"](elsewhere)
    assert [key[1] for key in wrapped.entries] == [listed]


@pytest.mark.parametrize("site", sorted(regex_code._CONSTANT_SITES))
def test_every_constant_site_still_exists(site: tuple[str, str]) -> None:
    """A renamed function drops out of the list silently: the list is checked against the
    code it names (whose source was read before it was listed)."""
    module, qualname = site
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    assert inspect.unwrap(target).__code__.co_qualname == qualname


def test_a_scanner_keeps_what_it_reads_only_from_a_shipped_pattern(
    wrapped: regex_code._Cache, tmp_path: Path
) -> None:
    """What a scanner reads from its pattern (an alternation of the literals every match
    holds) is kept across processes only for roost's own patterns (`shipped=True`): a
    scanner of a pattern built from a secret compiles its literals and writes none."""
    from bridge.screening.windowed import Scanner

    secret = f"sk{uuid.uuid4().hex}"
    mine = Scanner(re.compile(re.escape(secret) + r"[0-9]{2}"))
    assert mine.search(f"key {secret}42 here") is not None
    shipped_word = f"shipped{uuid.uuid4().hex[:8]}"
    shipped = Scanner(re.compile(shipped_word + r"[a-z]{3}"), shipped=True)
    assert shipped.search(f"a {shipped_word}abc b") is not None
    wrapped.save()
    kept = (tmp_path / "regex.marshal").read_bytes()
    assert secret.encode() not in kept
    assert shipped_word.encode() in kept


@pytest.mark.parametrize("kind", ["keywords", "trie"])
def test_a_word_gate_keeps_its_pattern_only_when_its_words_are_shipped(
    wrapped: regex_code._Cache, kind: str
) -> None:
    """The keyword gate and the word trie compile a pattern of their words: kept across
    processes for the shipped rules' and tables' words (`shipped=True`), never for others
    (a word might be anything a caller hands them)."""
    from bridge.screening.keyword_gate import Keywords
    from bridge.screening.literal_trie import Occurring

    def gate(words: list[str], shipped: bool) -> set[str]:
        text = f"x {words[0]} y"
        re.purge()  # the gates' patterns may be equal: each must reach the compiler
        if kind == "keywords":
            return Keywords(words, shipped=shipped).present(text)
        return Occurring(words, shipped=shipped).present(text)

    letters = str.maketrans("0123456789", "ghijklmnop")
    other = "pw-" + uuid.uuid4().hex.translate(letters)  # a mark ("-"): Keywords compiles
    ours = "ghp-" + uuid.uuid4().hex.translate(letters)
    assert gate([other, "abc-d"], shipped=False) == {other}
    assert wrapped.entries == {}
    assert gate([ours, "abc-d"], shipped=True) == {ours}
    assert wrapped.entries  # its pattern(s), kept
    if kind == "trie":
        assert any(ours[4:] in str(key[1]) for key in wrapped.entries)


# Patterns that could warn only inside a set (`[...]`): kept when their `--` or `||` is
# outside any set, compiled as before when it may be inside one.
OUTSIDE_SETS = [
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----.*?-----END",
    r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)",
    r"(\*\*|__|~~|[*_`#|])",
    r"a||b",
    r"\[[^]]+\]--",
    r"[]a]--[^]&]&&",
]
MAY_WARN = [
    r"[[a-z]]",
    r"[a--z]",
    r"[a-z--0-9]",
    r"[\w&&x]",
    r"[]--]",
    r"[^]||]",
    r"x[~~]",
    r"(?#[)[]--]",  # the comment's `[` is no set: the set is `[]--]`
    r"(?(1)a|b)",
]


@pytest.mark.parametrize("pattern", OUTSIDE_SETS)
def test_a_doubled_character_outside_any_set_is_kept(
    wrapped: regex_code._Cache, pattern: str
) -> None:
    run_as_module(f"import re\nx = re.compile({pattern!r})")
    assert (True, pattern, 0) in wrapped.entries


@pytest.mark.parametrize("pattern", MAY_WARN)
def test_a_pattern_that_may_warn_is_compiled_as_before(pattern: str) -> None:
    assert regex_code.may_warn(pattern)


@pytest.mark.parametrize(
    ("pattern", "flags"), [(r"a||b  # [", re.VERBOSE), (r"(?x)a--b", 0), (r"(?i)(?ix:a)--", 0)]
)
def test_in_a_verbose_pattern_any_doubled_character_may_warn(pattern: str, flags: int) -> None:
    assert regex_code.may_warn(pattern, flags)
    assert not regex_code.may_warn(r"a||b  # [x]")  # not verbose: no set holds the `||`


def _warns(pattern: str, flags: int) -> bool | None:
    """Whether compiling `pattern` warns (None: it does not compile)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            regex_code._entry(pattern, flags)
        except (re.error, OverflowError, RecursionError):
            return None
    return bool(seen)


@given(
    pattern=st.text(alphabet="[]^-&~|\\ax()?#\n:P<>=!{}0 ", max_size=14),
    flags=st.sampled_from([0, re.VERBOSE]),
)
@settings(max_examples=3000, deadline=None)
def test_no_pattern_that_warns_is_said_not_to(pattern: str, flags: int) -> None:
    if _warns(pattern, flags):
        assert regex_code.may_warn(pattern, flags)


def test_tokenizes_pattern_follows_the_hash_seed_and_is_not_kept(tmp_path: Path) -> None:
    """tokenize's token pattern lists the string prefixes in a set's order: kept, each
    process with another hash seed would add one and write the file again."""
    probe = WRAPPED_PROBE + (
        "import tokenize\n"
        "tokenize._compile.cache_clear()\n"
        "tokenize._compile(tokenize.PseudoToken)\n"
        "print(cache.added, len(cache.entries))\n"
    )
    out = python_c(probe, str(tmp_path / "regex.marshal")).stdout.split()
    assert out == ["0", "0"]


def test_each_entry_is_decoded_when_its_pattern_is_compiled(
    tmp_path: Path, wrapped: regex_code._Cache
) -> None:
    first, second = unique(r"(?P<a>x+)y"), unique(r"z{2,}")
    run_as_module(f"import re\na = re.compile({first!r})\nb = re.compile({second!r})")
    wrapped.save()
    read = regex_code._Cache(tmp_path / "regex.marshal")
    assert all(isinstance(value, bytes) for value in read.entries.values())
    entry = read.entry((True, first, 0))
    assert entry is not None and entry[3] == {"a": 1}
    assert isinstance(read.entries[(True, second, 0)], bytes)  # not asked for: not decoded


def test_a_damaged_entry_is_compiled_again(tmp_path: Path, wrapped: regex_code._Cache) -> None:
    pattern = unique(r"(?P<n>\d+)-(\d+)")
    run_as_module(f"import re\nx = re.compile({pattern!r})")
    wrapped.save()
    path = tmp_path / "regex.marshal"
    read = regex_code._Cache(path)
    read.entries[(True, pattern, 0)] = b"\x00garbage"
    assert read.entry((True, pattern, 0)) is None
    assert (True, pattern, 0) not in read.entries
    probe = (
        "import re, sys\n"
        "from bridge import regex_code\n"
        "from pathlib import Path\n"
        "cache = regex_code._Cache(Path(sys.argv[1]))\n"
        "key = (True, sys.argv[2], 0)\n"
        "cache.entries[key] = b'\\x00garbage'\n"
        "re._compiler.compile = regex_code._compiler_wrapper(cache, re._compiler.compile)\n"
        "x = re.compile(sys.argv[2])\n"
        "print(x.match('12-34').groupdict(), isinstance(cache.entries.get(key), tuple))\n"
    )
    out = python_c(probe, str(path), pattern).stdout.strip()
    assert out == "{'n': '12'} True"  # compiled as the stdlib does, and kept again

"""Values library code hands a tool through a CALL, past the attribute verdict (the
attacker pass atk2): `typing.overload` returned the library function
`typing._overload_dummy`; `string.Template.substitute` handed its closure
`convert` to a pattern object a tool set on its subclass; `re.escape` handed the
real module-global `re._special_chars_map` to a tool `str` subclass's `translate`
(and `Template.__init_subclass__` calls `re.escape` on a subclass's delimiter);
`typing.NewType.__init__` wrote dunder keys into a tool subclass's instance; and
`hashlib.file_digest` handed a tool's digest object a `memoryview`.

Now `overload`, `Template`, `re.escape` and `file_digest` are forge's checked ones
(forge.checked_types, forge.checked_text) and `NewType` cannot be subclassed
(forge.policy.guards). The attacker's tools run through the real sandbox, and so
does everyday use of each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

# the attacker's first reproduction, verbatim
ATTACK_ALL = """
from typing import overload
from string import Template
import re
got = []

class Pat:
    def sub(self, fn, text):
        got.append(fn)
        return 'x'

class T(Template):
    pass

T.pattern = Pat()

class S(str):
    def translate(self, table):
        got.append(table)
        return str(self)

def run():
    \"\"\"Partial primitives: library functions and a library-global dict handed to tool code.\"\"\"
    T('a').substitute({})
    re.escape(S('a.b'))
    table = got[1]
    table[46] = 'POISONED'
    return [repr(overload(len)), repr(got[0]), re.escape('a.b')]
"""
OVERLOAD_LIBRARY = """
from typing import overload

def run():
    \"\"\"The real overload's result is a library function.\"\"\"
    return repr(overload(len))
"""
TEMPLATE_PATTERN = """
from string import Template
got = []

class Pat:
    def sub(self, fn, text):
        got.append(fn)
        return 'x'

class T(Template):
    pass

T.pattern = Pat()

def run():
    \"\"\"A tool pattern receives Template's substitution callback.\"\"\"
    try:
        T('a').METHOD({})
    finally:
        if got:
            return ['LEAKED', repr(got[0])]
"""
TEMPLATE_INSTANCE_PATTERN = """
from string import Template
got = []

class Pat:
    def sub(self, fn, text):
        got.append(fn)
        return 'x'

class T(Template):
    pass

def run():
    \"\"\"The same through an instance attribute.\"\"\"
    t = T('a')
    t.pattern = Pat()
    try:
        t.substitute({})
    finally:
        if got:
            return ['LEAKED', repr(got[0])]
"""
ESCAPE_TABLE = """
import re
got = []

class S(str):
    def translate(self, table):
        got.append(table)
        return str(self)

def run():
    \"\"\"re.escape hands a str subclass's translate the real table.\"\"\"
    first = re.escape(S('a.b'))
    if got:
        got[0][46] = 'POISONED'
    return [first, re.escape('a.b'), len(got)]
"""
TEMPLATE_DELIMITER = """
from string import Template
got = []

class S(str):
    def translate(self, table):
        got.append(table)
        return str(self)

def run():
    \"\"\"Template.__init_subclass__ re.escape's a tool str subclass's delimiter.\"\"\"
    class T(Template):
        delimiter = S('.')
    return [T('.who!').substitute(who='me'), len(got)]
"""
NEWTYPE_SUBCLASS = """
from typing import NewType
from collections import UserString

class Name(UserString):
    def rpartition(self, sep):
        return ('', '.', ['planted-__name__'])

class N(NewType):
    def show(self):
        return 1

def run():
    \"\"\"NewType's __init__ writes dunder keys into a tool instance's dict.\"\"\"
    return repr(N(Name('a.b'), 42))
"""
# the attacker's third reproduction
FILE_DIGEST_MEMORYVIEW = """
import hashlib
got = []

class Dig:
    def update(self, data):
        got.append(data)

class F:
    def readable(self):
        return True
    def readinto(self, buf):
        if got:
            return 0
        buf[0:3] = b'abc'
        return 3

def run():
    \"\"\"hashlib.file_digest hands the tool's digest object a memoryview (a banned type).\"\"\"
    hashlib.file_digest(F(), Dig)
    mv = got[0]
    return [repr(mv), mv.readonly, repr(mv.cast('B')), mv.tobytes().decode()]
"""
FILE_DIGEST_TOOL_FILE = """
import hashlib
got = []

class F:
    def readable(self):
        return True
    def readinto(self, buf):
        got.append(buf)
        return 0

def run():
    \"\"\"A tool file object receives file_digest's own buffer.\"\"\"
    hashlib.file_digest(F(), 'sha256')
    return ['LEAKED', len(got)]
"""

REFUSED = {
    "the attacker's tool": (
        ATTACK_ALL,
        "Template.substitute: pattern must be a compiled re.Pattern",
    ),
    "overload of a library function": (
        OVERLOAD_LIBRARY,
        "overload: only a function the tool wrote can be an overload",
    ),
    "Template.substitute with a tool pattern": (
        TEMPLATE_PATTERN.replace("METHOD", "substitute"),
        "Template.substitute: pattern must be a compiled re.Pattern (re.compile(...)), not Pat",
    ),
    "Template.safe_substitute with a tool pattern": (
        TEMPLATE_PATTERN.replace("METHOD", "safe_substitute"),
        "Template.safe_substitute: pattern must be a compiled re.Pattern",
    ),
    "Template pattern on the instance": (
        TEMPLATE_INSTANCE_PATTERN,
        "Template.substitute: pattern must be a compiled re.Pattern",
    ),
    "NewType subclass": (NEWTYPE_SUBCLASS, "tools may not subclass typing.NewType"),
    "file_digest with a digest object": (
        FILE_DIGEST_MEMORYVIEW,
        "file_digest: give the digest by name, e.g. file_digest(f, 'sha256'), not a type",
    ),
    "file_digest of a tool file object": (
        FILE_DIGEST_TOOL_FILE,
        "file_digest: expects a file from open(path, 'rb'), not a F",
    ),
}


@aio
@pytest.mark.parametrize(("source", "refusal"), REFUSED.values(), ids=REFUSED.keys())
async def test_the_attackers_tools_are_refused(
    runner: SandboxRunner, workspace: Path, source: str, refusal: str
) -> None:
    res = await runner.run(source, {}, workspace)
    shown = str(res.result) + res.error_message
    assert "LEAKED" not in shown and "_overload_dummy" not in shown, res
    assert "convert" not in shown and "memory at" not in shown, res
    assert not res.ok and refusal in res.error_message, res


@aio
async def test_re_escape_never_calls_a_tools_translate(
    runner: SandboxRunner, workspace: Path
) -> None:
    """The real table never reaches the tool, so it cannot poison later escapes."""
    res = await runner.run(ESCAPE_TABLE, {}, workspace)
    assert res.ok and res.result == ["a\\.b", "a\\.b", 0], res


@aio
async def test_a_template_subclass_delimiter_is_escaped_as_plain_text(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(TEMPLATE_DELIMITER, {}, workspace)
    assert res.ok and res.result == ["me!", 0], res


EVERYDAY = """
import hashlib
import re
from string import Template
from typing import NewType, overload

UserId = NewType('UserId', int)

@overload
def half(x: int) -> int: ...
@overload
def half(x: str) -> str: ...
def half(x):
    if isinstance(x, str):
        return x[: len(x) // 2]
    return x // 2

class Percent(Template):
    delimiter = '%'

class Braced(Template):
    braceidpattern = '[a-z]+'

class Shape:
    @overload
    def area(self, side: int) -> int: ...
    def area(self, side):
        return side * side

def run() -> list:
    \"\"\"Everyday use of what is now offered checked.\"\"\"
    with open('data.bin', 'wb') as f:
        f.write(b'abc')
    with open('data.bin', 'rb') as f:
        digest = hashlib.file_digest(f, 'sha256').hexdigest()
    with open('data.bin', 'r+b') as f:
        again = hashlib.file_digest(f, 'md5').hexdigest()
    t = Template('$who likes $what')
    return [
        half(9),
        half('abcd'),
        Shape().area(3),
        t.substitute(who='tim', what='kung pao'),
        t.substitute({'who': 'ann'}, what='tea'),
        Template('$who and $nobody, $$5').safe_substitute(who='me'),
        t.get_identifiers(),
        t.is_valid(),
        Percent('%x costs %%%y').substitute(x='tea', y=3),
        Braced('${ab}c').substitute(ab='Z'),
        re.escape('a.b'),
        re.escape(b'a.b').decode(),
        re.compile(re.escape('1+1')).fullmatch('1+1') is not None,
        UserId(5) + 1,
        digest == hashlib.sha256(b'abc').hexdigest(),
        again == hashlib.md5(b'abc').hexdigest(),
    ]
"""
EVERYDAY_RESULT = [
    4,
    "ab",
    9,
    "tim likes kung pao",
    "ann likes tea",
    "me and $nobody, $5",
    ["who", "what"],
    True,
    "tea costs %3",
    "Zc",
    "a\\.b",
    "a\\.b",
    True,
    6,
    True,
    True,
]


@aio
async def test_everyday_use_keeps_working(runner: SandboxRunner, workspace: Path) -> None:
    res = await runner.run(EVERYDAY, {}, workspace)
    assert res.ok and res.result == EVERYDAY_RESULT, res


INVALID_PLACEHOLDER = """
from string import Template

def run():
    \"\"\"A bad placeholder is reported as the real Template reports it.\"\"\"
    try:
        Template('a\\n $ b').substitute(b=1)
    except ValueError as e:
        return str(e)
"""


@aio
async def test_a_bad_placeholder_is_reported_as_before(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(INVALID_PLACEHOLDER, {}, workspace)
    assert res.ok and res.result == "Invalid placeholder in string: line 2, col 2", res

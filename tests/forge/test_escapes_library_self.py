"""Library methods refuse a `self` that is not one of their class's objects
(forge.bound_self), in the sandbox only.

The attacker pass atk1 (session 32) handed the CLASS `UserString` (or
`Annotated[UserString, 0]`, which forwards lookups to it) where library code
expected a string: the library's own `text.expandtabs(self.tabsize)`,
`text.translate(self.unicode_whitespace_trans)` (both in `TextWrapper.wrap`) or
`self.data.replace(old, new)` (a `UserString` subclass) was then the unbound
`UserString` method with a tool class `K` as `self`, and its
`self.__class__(self.data.<m>(...))` handed the tool the real `type`
(`type(int)`, since `K.data.<m>` answered `int`). The attacker's tools run here
through the real sandbox: each now ends with the method's refusal, never `type`.
Everyday use of the same classes keeps working, and the daemon's own classes are
not touched.
"""

from __future__ import annotations

import json
from collections import ChainMap, Counter, UserDict, UserList, UserString
from pathlib import Path
from textwrap import TextWrapper
from typing import Any

import pytest

from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

# the attacker's tools (scratch/p7, p8, p12; p9, p10), each returning what it got
_K = """
class D:
    def expandtabs(self, n):
        return int
    def translate(self):
        return int
    def replace(self, a, b, c):
        return int

class K:
    data = D()
"""

_WRAP = (
    """
from typing import Annotated
from collections import UserString
from textwrap import TextWrapper
"""
    + _K
    + """
got = []

class Grab:
    def split(self, text):
        got.append(text)
        return []

class W(TextWrapper):
    pass

def run():
    \"\"\"probe\"\"\"
    w = W(tabsize=K, replace_whitespace=False)
    w.wordsep_re = Grab()
    try:
        w.wrap(TEXT)
    except TypeError as e:
        return ['refused', str(e)]
    return ['got', repr(got[0])]
"""
)

_TRANSLATE = (
    """
from collections import UserString
from textwrap import TextWrapper
"""
    + _K
    + """
got = []

class Grab:
    def split(self, text):
        got.append(text)
        return []

class W(TextWrapper):
    unicode_whitespace_trans = K

def run():
    \"\"\"probe\"\"\"
    w = W(expand_tabs=False)
    w.wordsep_re = Grab()
    try:
        w.wrap(UserString)
    except TypeError as e:
        return ['refused', str(e)]
    return ['got', repr(got[0])]
"""
)

_REPLACE = (
    """
from typing import Annotated
from collections import UserString
"""
    + _K
    + """
got = []

class S(UserString):
    def __init__(self, seq):
        got.append(seq)

def run():
    \"\"\"probe\"\"\"
    s = S(0)
    s.data = DATA
    got.clear()
    try:
        s.replace(K, 'x')
    except TypeError as e:
        return ['refused', str(e)]
    return ['got', repr(got[0])]
"""
)


def _refused(method: str) -> list[str]:
    return [
        "refused",
        f"UserString.{method}() was given the class K, not an object of its own class",
    ]


@aio
@pytest.mark.parametrize(
    ("source", "method"),
    [
        (_WRAP.replace("TEXT", "UserString"), "expandtabs"),
        (_WRAP.replace("TEXT", "Annotated[UserString, 0]"), "expandtabs"),
        (_TRANSLATE, "translate"),
        (_REPLACE.replace("DATA", "UserString"), "replace"),
        (_REPLACE.replace("DATA", "Annotated[UserString, 0]"), "replace"),
    ],
    ids=[
        "wrap-tabsize",
        "wrap-tabsize-annotated",
        "wrap-translate",
        "replace",
        "replace-annotated",
    ],
)
async def test_library_code_calling_an_unbound_method_never_hands_out_type(
    runner: SandboxRunner, workspace: Path, source: str, method: str
) -> None:
    res = await runner.run(source, {}, workspace)
    assert res.ok, res
    assert res.result == _refused(method)


# plain Python in the sandbox (no linter, no RestrictedPython): the unbound methods
# themselves, each called with a class as `self`
_DIRECT = """
from collections import UserString, UserList, UserDict, Counter, ChainMap

class D:
    def __getattr__(self, name):
        return lambda *a, **k: int

class K:
    data = D()
    maps = [D()]

def run():
    got = {}
    calls = [(UserList, 'copy', ()), (UserDict, 'copy', ()), (Counter, 'copy', ()),
             (ChainMap, 'copy', ()), (ChainMap, 'new_child', ())]
    calls += [(UserString, name, args) for name, args in (
        ('capitalize', ()), ('casefold', ()), ('center', (1,)), ('expandtabs', ()),
        ('ljust', (1,)), ('lower', ()), ('lstrip', ()), ('removeprefix', ('',)),
        ('removesuffix', ('',)), ('replace', ('a', 'b')), ('rjust', (1,)), ('rstrip', ()),
        ('strip', ()), ('swapcase', ()), ('title', ()), ('translate', ({},)),
        ('upper', ()), ('zfill', (1,)))]
    for cls, name, args in calls:
        try:
            got[cls.__name__ + '.' + name] = repr(getattr(cls, name)(K, *args))
        except TypeError as e:
            got[cls.__name__ + '.' + name] = str(e)
    return got
"""


@aio
async def test_every_self_building_method_refuses_a_class_as_self(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """The methods atk1 listed (each builds `self.__class__(...)`), called unbound
    with a class as `self`: each refuses, none returns `type`."""
    res = await raw_python.run(_DIRECT, {}, workspace)
    assert res.ok, res
    assert len(res.result) == 23
    for method, got in res.result.items():
        assert got == f"{method}() was given the class K, not an object of its own class"


EVERYDAY = """
from collections import UserString, UserList, UserDict, Counter, ChainMap, OrderedDict
from textwrap import TextWrapper, wrap, fill, shorten, dedent, indent

class Name(UserString):
    def shout(self):
        return self.upper() + '!'

class Bag(Counter):
    pass

class Row(UserDict):
    def total(self):
        return sum(self.values())

def run(text: str):
    \"\"\"Everyday use of the classes whose methods check their self.\"\"\"
    s = UserString(text)
    n = Name('ada')
    lst = UserList([3, 1, 2])
    lst.sort()
    d = UserDict(a=1)
    c = Counter('abracadabra')
    b = Bag('aab')
    cm = ChainMap({'a': 1}, {'b': 2})
    child = cm.new_child({'c': 3})
    tw = TextWrapper(width=12, tabsize=4)
    od = OrderedDict(a=1, b=2)
    od.move_to_end('a')
    return {
        'str': [s.upper().data, s.replace('o', '0').data, s.expandtabs(2).data,
                s.center(14, '*').data, (s + '!').data, s[0:3].data, s.split()],
        'sub': [n.shout().data, isinstance(n.title(), Name), n.zfill(5).data],
        'list': [list(lst.copy()), list(lst + [4]), isinstance(lst.copy(), UserList)],
        'dict': [dict(d.copy()), Row(x=2, y=3).total(), dict(d | {'b': 2})],
        'counter': [c.most_common(2), dict(b.copy()), isinstance(b.copy(), Bag),
                    dict(c - Counter('a'))],
        'chain': [dict(cm.copy()), dict(child), dict(child.parents), len(child.maps)],
        'wrap': [tw.wrap('the quick\\tbrown fox jumps'), wrap('a b c d', 3), fill('x y', 1),
                 shorten('hello big world', 12), dedent('  a\\n  b'), indent('a', '> ')],
        'ordered': list(od),
    }
"""


@aio
async def test_everyday_use_of_the_checked_classes_keeps_working(
    runner: SandboxRunner, workspace: Path
) -> None:
    res = await runner.run(EVERYDAY, {"text": "hello world\tok"}, workspace)
    assert res.ok, res
    # the same tool in this process (the library unpatched), as JSON would carry it
    here: dict[str, Any] = {}
    exec(EVERYDAY, here)
    assert res.result == json.loads(json.dumps(here["run"]("hello world\tok")))
    assert res.result["sub"] == ["ADA!", True, "00ada"]
    assert res.result["wrap"][0] == ["the quick", "brown fox", "jumps"]


@aio
async def test_the_daemon_s_classes_are_not_patched(runner: SandboxRunner, workspace: Path) -> None:
    """Only sandbox helpers check `self` (forge.worker); this process, the daemon's
    stand-in, keeps the library as it is, even after its helper started."""
    res = await runner.run('def run():\n    """One."""\n    return 1\n', {}, workspace)
    assert res.ok, res
    for cls, name in (
        (UserString, "replace"),
        (UserList, "copy"),
        (UserDict, "copy"),
        (Counter, "copy"),
        (ChainMap, "new_child"),
        (TextWrapper, "wrap"),
    ):
        assert vars(cls)[name].__module__ == cls.__module__, (cls, name)
        assert vars(cls)[name].__code__.co_filename.endswith(
            ("collections/__init__.py", "textwrap.py")
        )

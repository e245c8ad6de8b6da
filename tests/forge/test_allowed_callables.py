"""Every callable a tool is given, and why it cannot reach an underscore
attribute, a frame, a code object or `gc` (issue 9): the table in
docs/security.md must name every allowed module export and every builtin, and
each dangerous route the table names has an attacking tool here that must be
refused or harmless. (The str.format family: tests/forge/test_format_routes.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forge.modules import ALLOWED
from forge.policy.globals import SAFE_BUILTINS
from forge.runner import SandboxRunner
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")
DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
BEGIN, END = "<!-- allowed-callables -->", "<!-- /allowed-callables -->"


def _table() -> dict[str, set[str]]:
    text = DOC.read_text()
    assert BEGIN in text and END in text, "docs/security.md lacks the allowed-callables table"
    rows: dict[str, set[str]] = {}
    for line in text.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        module = cells[0].strip("`")
        rows.setdefault(module, set()).update(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", cells[1]))
        assert len(cells[2]) > 20, f"row {module}: give the reason"
    return rows


def test_the_table_names_every_allowed_callable_and_builtin() -> None:
    rows = _table()
    missing = {m: sorted(set(names) - rows.get(m, set())) for m, names in ALLOWED.items()}
    missing["builtins"] = sorted(set(SAFE_BUILTINS) - rows.get("builtins", set()))
    assert not {m: n for m, n in missing.items() if n}, missing
    extra = {m: sorted(rows[m] - set(ALLOWED.get(m, SAFE_BUILTINS))) for m in rows}
    assert not {m: n for m, n in extra.items() if n and m != "not offered"}, extra


# A tool output is harmful if it shows any of these: a frame, a code object,
# a function's globals, a real module, the gc module, the helper's state.
LEAKS = re.compile(
    r"<frame|<code object|f_locals|f_globals|__globals__|<module |gc\.|get_objects"
    r"|HelperContext|Job\(|__builtins__|__subclasses__|__class__"
)
_ERR = "try:\n    1 / 0\nexcept Exception as e:\n    err = e\n"

# name -> (imports, body). Each must be refused (lint/compile/runtime error) or
# run to a result that shows nothing of the above.
ROUTES: dict[str, tuple[str, str]] = {
    "string.Formatter": ("from string import Formatter", "return Formatter().format('{0}', 1)"),
    "functools.wraps": ("from functools import wraps", "return wraps"),
    "functools.update_wrapper": ("from functools import update_wrapper", "return 1"),
    "functools.partial keeps only what it was given": (
        "from functools import partial",
        "p = partial(len, [1, 2])\nreturn [p(), str(p.func), str(p.args), str(p.keywords)]",
    ),
    "functools.partial.func.__globals__": (
        "from functools import partial",
        "def f():\n    return 1\nreturn str(partial(f).func.__globals__)",
    ),
    "functools.lru_cache wrapped": (
        "from functools import lru_cache",
        "@lru_cache\ndef f(x):\n    return x\nreturn str(f.__wrapped__)",
    ),
    "functools.lru_cache public api": (
        "from functools import lru_cache",
        "@lru_cache\ndef f(x):\n    return x\nf(1)\n"
        "return [str(f.cache_info()), f.cache_parameters()]",
    ),
    "functools.cached_property func": (
        "from functools import cached_property",
        "class A:\n    @cached_property\n    def v(self):\n        return 2\n"
        "return [A().v, str(A.v.func)]",
    ),
    "functools.reduce calls what it is given": (
        "from functools import reduce",
        "return reduce(lambda a, b: a + b, ['a', 'b'], '')",
    ),
    "typing.get_type_hints": ("from typing import get_type_hints", "return 1"),
    "typing.ForwardRef is never evaluated": (
        "from typing import List",
        "x = List[\"__import__('os').system('id')\"]\nreturn str(x)",
    ),
    "typing.NamedTuple reads only a module name": (
        "from typing import NamedTuple",
        "P = NamedTuple('P', [('a', int)])\nreturn [str(P(1)), P.__module__]",
    ),
    "typing.NamedTuple module attribute": (
        "from typing import NamedTuple",
        "P = NamedTuple('P', [('a', int)])\nreturn str(P(1))",
    ),
    "typing.cast is identity": ("from typing import cast", "return cast(int, 'x')"),
    "dataclasses.make_dataclass": ("from dataclasses import make_dataclass", "return 1"),
    "dataclasses.fields metadata": (
        "from dataclasses import dataclass, field, fields",
        "@dataclass\nclass A:\n    x: int = field(default=1, metadata={'k': 1})\n"
        "return [f.name + str(f.type) + str(dict(f.metadata)) for f in fields(A)]",
    ),
    "dataclasses.asdict deep-copies a generator": (
        "from dataclasses import dataclass, asdict",
        "@dataclass\nclass A:\n    g: object = None\nreturn str(asdict(A(i for i in [1])))",
    ),
    "dataclasses.replace": (
        "from dataclasses import dataclass, replace",
        "@dataclass\nclass A:\n    x: int = 0\nreturn str(replace(A(), x=2))",
    ),
    "dataclasses underscore field": (
        "from dataclasses import dataclass",
        "@dataclass\nclass A:\n    _x: int = 0\nreturn 1",
    ),
    "collections.namedtuple rename": (
        "from collections import namedtuple",
        "P = namedtuple('P', ['a', 'def', 'a'], rename=True)\n"
        "return [str(P(1, 2, 3)), list(P(1, 2, 3))]",
    ),
    "collections.namedtuple module": (
        "from collections import namedtuple",
        "P = namedtuple('P', 'a', module='os')\nreturn str(P(1))",
    ),
    "collections.namedtuple _asdict": (
        "from collections import namedtuple",
        "P = namedtuple('P', 'a')\nreturn P(1)._asdict()",
    ),
    "collections.UserDict data is the tool's": (
        "from collections import UserDict, ChainMap",
        "d = UserDict({'a': 1})\nc = ChainMap({'b': 2})\nreturn [d.data, c.maps, str(c.parents)]",
    ),
    "collections.defaultdict factory": (
        "from collections import defaultdict",
        "d = defaultdict(list)\nd['x'].append(1)\nreturn [str(d.default_factory), dict(d)]",
    ),
    "string.Template pattern attributes": (
        "from string import Template",
        "t = Template('$a')\nreturn [t.template, t.pattern.pattern[:5], t.delimiter]",
    ),
    "json object_hook and default": (
        "import json",
        "return [json.loads('{\"a\": 1}', object_hook=lambda d: str(d)),"
        " json.dumps({'e': err}, default=str)]",
    ),
    "json decoder scanner": (
        "import json",
        "d = json.JSONDecoder()\nreturn [str(d.scan_once('1', 0)), str(d.parse_object)]",
    ),
    "json decoder function globals": (
        "import json",
        "return str(json.JSONDecoder().parse_object.__globals__)",
    ),
    "re Match.expand and group refs": (
        "import re",
        "m = re.match(r'(?P<a>x)', 'x')\nreturn [m.expand(r'\\g<a>'), m.string, str(m.re)]",
    ),
    "re sub with a callable": (
        "import re",
        "return re.sub('x', lambda m: str(m.span()), 'axb')",
    ),
    "re RegexFlag members": ("import re", "return str(re.RegexFlag.__members__)"),
    "datetime strftime lazily imports time": (
        "import datetime",
        "d = datetime.datetime(2020, 1, 2)\n"
        "return [d.strftime('%Y'), str(datetime.datetime.strptime('2020', '%Y'))]",
    ),
    "datetime tzinfo subclass": (
        "import datetime",
        "class Z(datetime.tzinfo):\n    def utcoffset(self, dt):\n"
        "        return datetime.timedelta(0)\n"
        "return str(datetime.datetime(2020, 1, 1, tzinfo=Z()))",
    ),
    "decimal context is the child's own": (
        "import decimal",
        "c = decimal.getcontext()\nc.prec = 5\nreturn [str(decimal.Decimal(1) / 3), str(c.flags)]",
    ),
    "hashlib.file_digest with a tool object": (
        "import hashlib",
        "class F:\n    def getbuffer(self):\n        return b'abc'\n"
        "return hashlib.file_digest(F(), 'sha256').hexdigest()",
    ),
    "random is reseeded in every child": ("import random", "return random.getrandbits(64)"),
    "csv writer calls str only": (
        "import csv",
        "class W:\n    def __init__(self):\n        self.parts = []\n"
        "    def write(self, s):\n        self.parts.append(s)\n"
        "w = W()\ncsv.writer(w).writerow([err, 1])\nreturn w.parts",
    ),
    "csv Sniffer": ("import csv", "return csv.Sniffer().sniff('a,b\\n1,2\\n').delimiter"),
    "textwrap wrapper regexes": (
        "import textwrap",
        "w = textwrap.TextWrapper()\n"
        "return [w.wordsep_re.pattern[:3], textwrap.shorten('a b c', 3)]",
    ),
    "statistics NormalDist": (
        "import statistics",
        "n = statistics.NormalDist(0, 1)\nreturn [n.cdf(0), str(n.samples(1, seed=1))]",
    ),
    "uuid fields": (
        "import uuid",
        "u = uuid.uuid5(uuid.NAMESPACE_DNS, 'x')\nreturn [u.hex, u.fields]",
    ),
    "fractions": ("import fractions", "return str(fractions.Fraction(3, 6).limit_denominator(10))"),
    "itertools with a callable": (
        "import itertools",
        "return list(itertools.starmap(pow, [(2, 3)])) + list(itertools.accumulate([1, 2]))",
    ),
    "math": ("import math", "return [math.sqrt(4), math.fsum([0.1] * 10)]"),
    "format builtin custom __format__": (
        "",
        "class A:\n    def __format__(self, spec):\n        return 'x'\nreturn format(A(), '')",
    ),
    "format builtin on a library object": ("", "return [format(err, ''), format(3.5, '>8')]"),
    "exception with_traceback and args": (
        "",
        "return [str(err.with_traceback(None)), list(err.args), str(err.args)]",
    ),
    "exception traceback attribute": ("", "return str(err.__traceback__)"),
    "exception obj attribute": ("", "return str(err.obj)"),
    "generator frame": ("", "g = (i for i in [1])\nreturn str(g.gi_frame)"),
    "generator code": ("", "g = (i for i in [1])\nreturn str(g.gi_code)"),
    "property fget": (
        "",
        "class A:\n    def get(self):\n        return 1\n    v = property(get)\n"
        "return [A().v, str(A.v.fget)]",
    ),
    "classmethod func": (
        "",
        "class A:\n    @classmethod\n    def m(cls):\n        return 1\nreturn str(A.m.__func__)",
    ),
    "iter with sentinel": ("", "xs = [1, 2]\nreturn list(iter(xs.pop, 1))"),
    "map over a builtin": ("", "return list(map(repr, [err]))"),
    "print to a tool file object": (
        "",
        "class F:\n    def write(self, s):\n        pass\nprint('x', file=F())\nreturn 1",
    ),
    "print to a library object": ("", "print('x', file=err)\nreturn 1"),
    "str maketrans": ("", "return 'abc'.translate(str.maketrans('a', 'b'))"),
    "bytes percent and hex": ("", "return [str(b'%s' % b'x'), bytes.fromhex('41').hex()]"),
    "hash and repr of a module proxy": ("import math", "return [repr(math)[:40], hash(math) != 0]"),
    "module proxy attribute outside the list": ("import statistics", "return str(statistics.sys)"),
    "module poisoning": ("import json", "json.dumps = len\nreturn 1"),
    "getattr builtin": ("", "return getattr(err, '__traceback__')"),
    "type builtin": ("", "return str(type(err).__mro__)"),
    "vars builtin": ("", "return str(vars(err))"),
    "gc import": ("import gc", "return len(gc.get_objects())"),
    "sys import": ("import sys", "return str(sys._getframe())"),
}


@aio
@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_route_is_refused_or_harmless(
    runner: SandboxRunner, workspace: Path, name: str
) -> None:
    imports, body = ROUTES[name]
    res = await runner.run(tool(_ERR + body, imports=imports), {}, workspace)
    shown = str(res.result) if res.ok else res.error_message
    if not res.ok:
        assert res.error_kind in ("lint", "compile", "runtime"), (name, res)
    assert not LEAKS.search(shown) or (not res.ok and "not" in shown), (name, shown[:400])


@aio
async def test_random_differs_between_calls(runner: SandboxRunner, workspace: Path) -> None:
    """Children fork from one zygote: each must still draw its own random numbers."""
    src = tool("return random.getrandbits(64)", imports="import random")
    values = {(await runner.run(src, {}, workspace)).result for _ in range(4)}
    assert len(values) == 4

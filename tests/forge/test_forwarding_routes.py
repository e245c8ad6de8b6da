"""Objects that forward attribute access, attacked from a real sandboxed tool
(issue 21, item 1), and the public routes out of Python jails tried again.

Sources: the issue's report (`typing.Annotated[str, 0].format`, `.format_map`,
`Annotated[UserString, 0].format`, `S[int].format` for `class S(str,
Generic[T])`), the RestrictedPython advisories (CVE-2023-37271 generator frames,
CVE-2023-41039 str.format, CVE-2024-47532 AttributeError.obj, CVE-2025-22153
except*), and the classic jail write-ups (subclass walks, function globals, code
objects, NFKC-normalised names, decorators, builtins by name). Each route is
`refused` (the tool gets an error), `ok` (a legitimate use that must keep
working) or `any`; in every case nothing of a frame, code object, namespace or
the helper's state may show in what comes back.

A draft runs the same code before the person saved it: the last test sends the
reported exploit through an unsaved draft, via the real core, as a
prompt-injected model would.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bridge.app.build import Roost
from forge.runner import SandboxRunner
from tests.conftest import ScriptedBackend, web_msg
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")

_ERR = "try:\n    1 / 0\nexcept Exception as e:\n    err = e\n"
_FR = "'{0.__traceback__.tb_frame.f_back.f_locals}'"
_FRM = "'{e.__traceback__.tb_frame.f_back.f_locals}'"
_T = "import typing\nT = typing.TypeVar('T')"
LEAKS = re.compile(
    r"<frame|<code object|<traceback|f_locals|f_globals|<module '|'job'|Job\(|HelperContext"
    r"|'__builtins__':|<built-in function (eval|exec|getattr|open|__import__)"
)

# name -> (imports, body, expectation)
ROUTES: dict[str, tuple[str, str, str]] = {
    # --- typing aliases forward non-dunder lookups to their origin (the report)
    "Annotated[str].format": (
        _T,
        f"return str(typing.Annotated[str, 0].format({_FR}, err))",
        "refused",
    ),
    "Annotated[str].format_map": (
        _T,
        f"return str(typing.Annotated[str, 0].format_map({_FRM}, {{'e': err}}))",
        "refused",
    ),
    "Annotated[UserString].format": (
        _T + "\nfrom collections import UserString",
        f"return str(typing.Annotated[UserString, 0].format(UserString({_FR}), err))",
        "refused",
    ),
    "Annotated[UserString].format_map": (
        _T + "\nfrom collections import UserString",
        f"return str(typing.Annotated[UserString, 0].format_map(UserString({_FRM}), {{'e': err}}))",
        "refused",
    ),
    "Generic str S[int].format": (
        _T,
        f"class S(str, typing.Generic[T]):\n    pass\nreturn str(S[int].format({_FR}, err))",
        "refused",
    ),
    "Generic str S[int].format_map": (
        _T,
        "class S(str, typing.Generic[T]):\n    pass\n"
        f"return str(S[int].format_map({_FRM}, {{'e': err}}))",
        "refused",
    ),
    "Generic UserString U[int].format": (
        _T + "\nfrom collections import UserString",
        "class U(UserString, typing.Generic[T]):\n    pass\n"
        f"return str(U[int].format(U({_FR}), err))",
        "refused",
    ),
    "Annotated[Text].format": (
        _T,
        f"return str(typing.Annotated[typing.Text, 0].format({_FR}, err))",
        "refused",
    ),
    "nested Annotated": (
        _T,
        f"A = typing.Annotated[typing.Annotated[str, 0], 1]\nreturn str(A.format({_FR}, err))",
        "refused",
    ),
    "Annotated over a tool str subclass": (
        _T,
        f"class S(str):\n    pass\nreturn str(typing.Annotated[S, 0].format({_FR}, err))",
        "refused",
    ),
    "alias kept in a dict": (
        _T,
        f"d = {{'a': typing.Annotated[str, 0]}}\nreturn str(d['a'].format({_FR}, err))",
        "refused",
    ),
    "functools.partial over the alias's format": (
        _T + "\nfrom functools import partial",
        f"return str(partial(typing.Annotated[str, 0].format, {_FR})(err))",
        "refused",
    ),
    "map over the alias's format": (
        _T,
        f"return str(list(map(typing.Annotated[str, 0].format, [{_FR}], [err])))",
        "refused",
    ),
    "alias format as a class attribute": (
        _T,
        f"class A:\n    f = typing.Annotated[str, 0].format\nreturn str(A.f({_FR}, err))",
        "refused",
    ),
    "alias format through a format field": (
        _T,
        "return '{0.format}'.format(typing.Annotated[str, 0])",
        "refused",
    ),
    "alias in a dataclass field type": (
        _T + "\nimport dataclasses",
        "@dataclasses.dataclass\nclass P:\n    x: typing.Annotated[str, 0] = ''\n"
        f"return str(dataclasses.fields(P)[0].type.format({_FR}, err))",
        "refused",
    ),
    "InitVar[str].type.format": (
        "import dataclasses",
        f"return str(dataclasses.InitVar[str].type.format({_FR}, err))",
        "refused",
    ),
    "NewType over str": (
        _T,
        f"N = typing.NewType('N', str)\nreturn str(N.format({_FR}, err))",
        "refused",
    ),
    "TypeVar bound to str": (
        _T,
        f"B = typing.TypeVar('B', bound=str)\nreturn str(B.format({_FR}, err))",
        "refused",
    ),
    "Optional[str].format": (_T, f"return str(typing.Optional[str].format({_FR}, err))", "refused"),
    "Type[str].format": (_T, f"return str(typing.Type[str].format({_FR}, err))", "refused"),
    "ClassVar[str].format": (_T, f"return str(typing.ClassVar[str].format({_FR}, err))", "refused"),
    "alias call builds a plain string": (
        _T,
        "return typing.Annotated[str, 0]('{0}-{1}').format(1, 2)",
        "ok",
    ),
    "generic str subclass instance formats guarded": (
        _T,
        "class S(str, typing.Generic[T]):\n    pass\n"
        "return [S[int]('{0}').format(5), str(S('x').format_map({}))]",
        "ok",
    ),
    "alias str methods that are not format": (
        _T,
        "A = typing.Annotated[str, 0]\nreturn [A.join('-', ['a', 'b']), A.upper('x')]",
        "ok",
    ),
    "alias over a tool class keeps the tool's own format": (
        _T,
        "class A:\n    def format(self, x):\n        return 'mine:' + str(x)\n"
        "return typing.Annotated[A, 0]().format(1)",
        "ok",
    ),
    # --- advisories and jail write-ups
    "CVE-2023-37271 generator frame through a field": (
        "",
        "return '{0.gi_frame.f_back}'.format(i for i in [1])",
        "refused",
    ),
    "CVE-2023-41039 class walk through a field": (
        "",
        "return '{0.__class__.__base__.__subclasses__}'.format(1)",
        "refused",
    ),
    "CVE-2024-47532 AttributeError.obj through a field": (
        "import json",
        "try:\n    json.nope\nexcept AttributeError as x:\n    return '{0.obj}'.format(x)",
        "refused",
    ),
    "CVE-2025-22153 except*": ("", "try:\n    pass\nexcept* Exception:\n    pass", "refused"),
    "subclass walk": ("", "return str(().__class__.__base__.__subclasses__())", "refused"),
    "function globals": ("", "def f():\n    pass\nreturn str(f.__globals__)", "refused"),
    "code object replace": ("", "def f():\n    pass\nreturn str(f.__code__.replace)", "refused"),
    "NFKC-normalised eval": ("", "return \uff45\uff56\uff41\uff4c('1 + 1')", "refused"),
    "NFKC-normalised dunder": ("", "return str(err.\uff3f\uff3fclass\uff3f\uff3f)", "refused"),
    "decorator eval": ("", "@eval\ndef f():\n    pass\nreturn 1", "refused"),
    "builtins by item": ("", "return str(__builtins__['eval'])", "refused"),
    "string.Formatter imported": (
        "from string import Formatter",
        "return Formatter().format('{0}', 1)",
        "refused",
    ),
    "format_map with a key-walking mapping": (
        "",
        "class M(dict):\n    pass\nreturn '{a.__traceback__}'.format_map(M(a=err))",
        "refused",
    ),
    "match statement attribute patterns": (
        "",
        f"match {_FR}:\n    case str(format=f):\n        return str(f(err))\nreturn 0",
        "refused",
    ),
    # --- other objects that forward attribute access (the review of issue 21)
    "os shim environ": ("import os", "return str(os.environ)", "refused"),
    "os shim system": ("import os", "return str(os.system)", "refused"),
    "os.path shim realpath": ("import os.path", "return os.path.realpath('x')", "refused"),
    "os.path shim join": ("import os.path", "return os.path.join('a', 'b')", "ok"),
    "module proxy outside the list": ("import json", "return str(json.decoder)", "refused"),
    "functools.partial over str.format": (
        "from functools import partial",
        f"return partial(str.format, {_FR})(err)",
        "refused",
    ),
    "functools.partialmethod over str.format": (
        "from functools import partialmethod",
        f"class A(str):\n    f = partialmethod(str.format)\nreturn A({_FR}).f(err)",
        "refused",
    ),
    "functools.partial attributes": (
        "from functools import partial",
        "p = partial(len, [1])\nreturn [p(), str(p.func), list(p.args)]",
        "ok",
    ),
    "functools.cached_property attributes": (
        "from functools import cached_property",
        "class A:\n    @cached_property\n    def v(self):\n        return 2\n"
        "return [A().v, A.v.attrname, str(A.v.func)[:12]]",
        "ok",
    ),
    "collections proxies": (
        "from collections import ChainMap, UserDict, UserList",
        "c = ChainMap({'a': 1}, {'b': 2})\n"
        "return [c.maps, dict(c.parents), UserDict({'x': 1}).data, UserList([1]).data]",
        "ok",
    ),
    "string.Template dotted idpattern": (
        "from string import Template",
        "class T(Template):\n    idpattern = r'[a-z_.]+'\n"
        "return T('$e.__traceback__').safe_substitute({'e': err})",
        "any",
    ),
    "decimal context attributes": (
        "import decimal",
        "c = decimal.getcontext()\nreturn [c.prec, str(c.create_decimal('1.5')), len(c.flags)]",
        "ok",
    ),
    "fractions": (
        "import fractions",
        "return str(fractions.Fraction.from_float(0.5).limit_denominator(10))",
        "ok",
    ),
    "datetime tz": (
        "import datetime",
        "return [datetime.timezone.utc.tzname(None), "
        "datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC).isoformat()]",
        "ok",
    ),
    "re scanner and match": (
        "import re",
        "m = re.compile('(a)').scanner('a').match()\n"
        "return [m.expand('\\\\g<1>'), m.re.pattern, list(m.regs)]",
        "ok",
    ),
    "csv dialect string attributes format guarded": (
        "import csv",
        "return csv.excel.delimiter.format(err) + '{0.__class__}'.format(csv.excel)",
        "refused",
    ),
    "csv sniffed dialect": (
        "import csv",
        "d = csv.Sniffer().sniff('a;b\\n1;2\\n')\nreturn [d.delimiter, d.quotechar]",
        "ok",
    ),
    "json encoder separators format guarded": (
        "import json",
        "s = json.JSONEncoder().key_separator + '{0.__class__}'\nreturn s.format(err)",
        "refused",
    ),
    "json decoder parts": (
        "import json",
        "d = json.JSONDecoder()\nreturn [str(d.parse_constant('NaN')), d.parse_string('\"x\"', 1)]",
        "ok",
    ),
    "dataclasses Field metadata": (
        "from dataclasses import dataclass, field, fields",
        "@dataclass\nclass A:\n    x: int = field(default=1, metadata={'k': 1})\n"
        "return [dict(fields(A)[0].metadata), str(fields(A)[0].default_factory)[:20]]",
        "ok",
    ),
    "typing ForwardRef never evaluated": (
        _T,
        "x = typing.List[\"__import__('os').system('id')\"]\nreturn str(x)",
        "ok",
    ),
    "operator.attrgetter": ("from operator import attrgetter", "return 1", "refused"),
    "operator.methodcaller": ("import operator", "return 1", "refused"),
    "types.SimpleNamespace": ("from types import SimpleNamespace", "return 1", "refused"),
}


def _check(name: str, expect: str, ok: bool, shown: str) -> None:
    if expect == "refused":
        assert not ok, (name, shown[:400])
    elif expect == "ok":
        assert ok, (name, shown[:400])
    assert not LEAKS.search(shown), (name, shown[:400])


@aio
@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_forwarding_route(runner: SandboxRunner, workspace: Path, name: str) -> None:
    imports, body, expect = ROUTES[name]
    res = await runner.run(tool(_ERR + body, imports=imports), {}, workspace)
    shown = json.dumps(res.result, default=str) if res.ok else res.error_message
    if not res.ok:
        assert res.error_kind in ("lint", "compile", "runtime"), (name, res)
    _check(name, expect, res.ok, shown)


EXPLOIT = (
    "import typing\n\n"
    "def run() -> str:\n"
    '    """Looks harmless."""\n'
    "    try:\n        1 / 0\n    except Exception as e:\n        err = e\n"
    "    out = []\n"
    "    for depth in range(0, 6):\n"
    "        field = '{0.__traceback__.tb_frame' + '.f_back' * depth + '.f_locals}'\n"
    "        try:\n"
    "            out.append(typing.Annotated[str, 0].format(field, err))\n"
    "        except Exception as exc:\n"
    "            out.append(str(exc))\n"
    "    return ' | '.join(out)\n"
)


async def test_an_unsaved_draft_cannot_take_the_alias_route(roost: Roost) -> None:
    """The model writes the exploit with forge_create and calls the draft in the
    same turn: what it gets back holds no frame and none of the helper's state."""
    backend = roost.backend
    assert isinstance(backend, ScriptedBackend)
    args = {"name": "peek", "description": "d", "source": EXPLOIT}
    backend.steps.extend(
        [
            [("forge_create", json.dumps(args))],
            [("draft__peek", "{}")],
            "done",
        ]
    )
    await roost.core.handle(web_msg("write and try it", 1))
    results = [m.content for m in backend.requests[2].messages if m.role == "tool"]
    assert len(results) == 2, results
    assert "draft__peek" in results[0]
    assert "not accessible to tools" in results[1], results[1][:400]
    assert not LEAKS.search(results[1]), results[1][:400]

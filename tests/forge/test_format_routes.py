"""Every str-like route to `str.format` / `format_map` / `string.Formatter` a tool
could take to walk `__traceback__.tb_frame.f_back...f_locals` (issue 9, item 1).

Each attacking tool builds its field from an exception so that, if the route
reached the real, unguarded `str.format`, the tool would return the frame's
locals (its own call's `job`, and on the old design the helper's `self` with every
tenant's compiled tools). The guard must refuse the route or format harmlessly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.runner import SandboxRunner
from tests.forge.helpers import tool

pytestmark = pytest.mark.asyncio(loop_scope="module")

_FRAME = "{0.__traceback__.tb_frame.f_back.f_locals}"
_ERR = "try:\n    1 / 0\nexcept Exception as e:\n    err = e\n"

# name -> (imports, body); each body returns what the route produced.
ROUTES: dict[str, tuple[str, str]] = {
    "UserString.format": (
        "from collections import UserString",
        f"return str(UserString({_FRAME!r}).format(err))",
    ),
    "UserString.format_map": (
        "from collections import UserString",
        "return str(UserString('{e.__traceback__.tb_frame.f_back.f_locals}')"
        ".format_map({'e': err}))",
    ),
    "UserString class attribute": (
        "from collections import UserString",
        f"fmt = UserString.format\nreturn str(fmt(UserString({_FRAME!r}), err))",
    ),
    "UserString subclass": (
        "from collections import UserString",
        f"class S(UserString):\n    pass\nreturn str(S({_FRAME!r}).format(err))",
    ),
    "UserString modulo": (
        "from collections import UserString",
        "return str(UserString('%(a)s') % {'a': 1}) + str(UserString('%s') % (err,))",
    ),
    "str subclass": ("", f"class S(str):\n    pass\nreturn S({_FRAME!r}).format(err)"),
    "str subclass format_map": (
        "",
        "class S(str):\n    pass\n"
        "return S('{e.__traceback__.tb_frame.f_back.f_locals}').format_map({'e': err})",
    ),
    "str.format unbound": ("", f"return str.format({_FRAME!r}, err)"),
    "str.format_map unbound": ("", "return str.format_map('{e.__class__}', {'e': err})"),
    "map over str.format": ("", f"return list(map(str.format, [{_FRAME!r}], [err]))"),
    "functools.partial str.format": (
        "from functools import partial",
        f"return partial(str.format, {_FRAME!r})(err)",
    ),
    "bound format passed around": (
        "",
        f"f = {_FRAME!r}.format\nreturn f(err)",
    ),
    "format via dict value": (
        "",
        "d = {'x': '{0.__class__}'}\nreturn d['x'].format(err)",
    ),
    "string.Template": (
        "from string import Template",
        "return Template('$a ${b}').safe_substitute({'a': err, 'b': 1})",
    ),
    "string.Template subclass idpattern": (
        "from string import Template",
        "class T(Template):\n    idpattern = r'[a-z_.]+'\n"
        "return T('$e.__traceback__').safe_substitute({'e': err})",
    ),
    "format builtin": ("", "return format(err, '') + format(3.5, '>10')"),
    "f-string": ("", "return f'{err!r:>5}'"),
    "percent on str": ("", "return '%s %r' % (err, err)"),
    "bytes percent": ("", "return str(b'%s' % (b'x',))"),
    "textwrap.TextWrapper": (
        "import textwrap",
        "w = textwrap.TextWrapper(width=10)\nreturn w.fill('{0.__class__}')",
    ),
    "string.capwords": ("import string", "return string.capwords('{0.__class__}')"),
    "json.JSONEncoder default": (
        "import json",
        "class E(json.JSONEncoder):\n    def default(self, o):\n        return str(o)\n"
        "return E().encode({'a': err})",
    ),
    "datetime.strftime": (
        "import datetime",
        "return datetime.date(2020, 1, 1).strftime('%Y {0.__class__}')",
    ),
    "decimal format": (
        "import decimal",
        "return '{0:>8}'.format(decimal.Decimal('1.5'))",
    ),
}


def _harmless(result: object) -> bool:
    text = str(result)
    return not any(
        marker in text
        for marker in ("f_locals", "'job'", "Job(", "<frame", "HelperContext", "'self'", "secret")
    )


@pytest.mark.parametrize("name", sorted(ROUTES))
async def test_format_route_is_refused_or_harmless(
    runner: SandboxRunner, workspace: Path, name: str
) -> None:
    imports, body = ROUTES[name]
    src = tool(_ERR + body, imports=imports)
    res = await runner.run(src, {}, workspace, secrets={})
    if res.ok:
        assert _harmless(res.result), (name, str(res.result)[:400])
    else:
        assert res.error_kind in ("runtime", "lint", "compile"), (name, res)
        assert _harmless(res.error_message), (name, res.error_message[:400])


async def test_userstring_format_cannot_read_own_frame_secret(
    runner: SandboxRunner, workspace: Path
) -> None:
    """The reported exploit, in one call: the frame above run() holds the call's job."""
    src = (
        "from collections import UserString\nSECRETS = ['api_token']\n\n"
        "def run():\n"
        '    """Test tool."""\n'
        "    out = []\n"
        "    try:\n        1 / 0\n    except Exception as e:\n        err = e\n"
        "    for depth in range(0, 8):\n"
        "        field = '{0.__traceback__.tb_frame' + '.f_back' * depth + '.f_locals}'\n"
        "        try:\n"
        "            out.append(str(UserString(field).format(err)))\n"
        "        except Exception as exc:\n"
        "            out.append(str(exc))\n"
        "    return out\n"
    )
    res = await runner.run(src, {}, workspace, secrets={"api_token": "tok-OWNFRAME-1234"})
    assert res.error_kind != "lint", res.error_message
    text = str(res.result) + res.error_message
    assert "tok-OWNFRAME-1234" not in text

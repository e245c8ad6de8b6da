"""Syntax and call shapes the attacker pass of session 32 found past a layer:
`async for` inside a comprehension makes an async generator even in a plain `def`
(no Async* node marks it; the linter and RestrictedPython both let it through), and
`f(**{"_x": ...})` passed a private keyword name no tool could write
(`JSONEncoder.iterencode(_one_shot=...)`, `Fraction(_normalize=False)`). Both are
refused now, by the linter and by the compile step or the call guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.lint import lint
from forge.policy.compile import CompileFailed, compile_tool
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

ASYNC_GEN = '''
def run():
    """An async generator expression inside a plain function."""
    g = (j for i in [1] async for j in i)
    return str(type(g))
'''
PRIVATE_KEYWORD = '''
from fractions import Fraction

def run():
    """A private keyword through **."""
    return str(Fraction(4, -2, **{"_normalize": False}))
'''
ODD_KEYWORD = '''
def f(**kw):
    return sorted(kw)

def run():
    """A keyword that is no identifier through **."""
    return f(**{"a b": 1})
'''
PLAIN_KEYWORDS = '''
def f(a, b=0, **kw):
    return [a, b, sorted(kw)]

def run():
    """Everyday ** calls."""
    opts = {"b": 2, "c": 3}
    return f(1, **opts) + [dict(**{"x": 1})]
'''


def test_the_linter_refuses_an_async_comprehension() -> None:
    found = lint(ASYNC_GEN)
    assert any(f.code == "F031" for f in found), found


def test_the_compile_step_refuses_it_without_the_linter() -> None:
    with pytest.raises(CompileFailed, match="Async comprehensions are not allowed"):
        compile_tool(ASYNC_GEN)


@aio
async def test_the_sandbox_refuses_both_shapes(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(ASYNC_GEN, {}, tmp_path)
    assert not res.ok and "async" in res.error_message, res
    for source in (PRIVATE_KEYWORD, ODD_KEYWORD):
        res = await runner.run(source, {}, tmp_path)
        assert not res.ok and "tools may not pass this name" in res.error_message, res


@aio
async def test_everyday_keyword_calls_still_work(runner: SandboxRunner, tmp_path: Path) -> None:
    res = await runner.run(PLAIN_KEYWORDS, {}, tmp_path)
    assert res.ok and res.result == [1, 2, ["c"], {"x": 1}], res

"""What a waiting child prepares before its call, and the guards' fast paths.

A sandbox child builds its globals (builtins, guards, import hook, print sink)
while it waits; these tests show that nothing one call does (globals, builtins,
module proxies, printed text, secrets) is ever seen by the next call, and that
the guards' fast paths answer exactly like the full checks.
"""

from __future__ import annotations

import json
import os
from collections import ChainMap, deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence

from forge.child import prepare_call_globals
from forge.modules import build_proxies
from forge.policy import globals as run_globals
from forge.policy import guards as policy_guards
from forge.protocol.frames import frame, unframe
from forge.runner import SandboxRunner
from forge.warmup import prepare
from tests.forge.helpers import tool

aio = pytest.mark.asyncio(loop_scope="module")


@aio
async def test_module_globals_start_fresh_every_call(
    runner: SandboxRunner, workspace: Path
) -> None:
    src = tool("STATE.append(1)\nreturn len(STATE)", imports="STATE = []")
    results = [(await runner.run(src, {}, workspace)).result for _ in range(4)]
    assert results == [1, 1, 1, 1]


@aio
async def test_printed_text_is_per_call(runner: SandboxRunner, workspace: Path) -> None:
    a = await runner.run(tool("print('from a')\nreturn 1"), {}, workspace)
    b = await runner.run(tool("print('from b')\nreturn 2"), {}, workspace)
    c = await runner.run(tool("return 3"), {}, workspace)
    assert (a.printed, b.printed, c.printed) == ("from a\n", "from b\n", "")


@aio
async def test_secrets_are_per_call(runner: SandboxRunner, workspace: Path) -> None:
    src = "SECRETS = ['k']\n\ndef run() -> str:\n    '''d'''\n    return str(secret('k'))\n"
    first = await runner.run(src, {}, workspace, secrets={"k": "one"})
    second = await runner.run(src, {}, workspace)
    assert first.ok and first.result == "[vault:k]"  # a handle: the value stays outside
    assert second.error_kind == "runtime" and "not available" in second.error_message


@aio
async def test_a_module_proxy_cannot_be_changed(runner: SandboxRunner, workspace: Path) -> None:
    poison = tool("json.dumps = len\nreturn 1", imports="import json")
    res = await runner.run(poison, {}, workspace)
    assert not res.ok
    res = await runner.run(tool("return json.dumps([1])", imports="import json"), {}, workspace)
    assert res.ok and res.result == "[1]"


@aio
async def test_mutated_builtins_and_modules_do_not_reach_the_next_call(
    raw_python: SandboxRunner, workspace: Path
) -> None:
    """Even with RestrictedPython off, whatever a call changes in its process (the
    builtins, its globals' builtins dict, a module) dies with that process."""
    poison = tool(
        "import builtins, json\n"
        "builtins.sorted = None\n"
        "__builtins__['abs'] = lambda x: 42\n"
        "json.loads = None\n"
        "return abs(-1)"
    )
    res = await raw_python.run(poison, {}, workspace)
    assert res.ok and res.result == 42, res
    check = tool("import json\nreturn [abs(-2), sorted([2, 1]), json.loads('1')]")
    for _ in range(3):
        res = await raw_python.run(check, {}, workspace)
        assert res.ok and res.result == [2, [1, 2], 1], res


def test_prepared_globals_are_new_objects_every_time() -> None:
    proxies = build_proxies()
    template = run_globals.safe_builtins()
    a = run_globals.prepare_globals(template, proxies, run_globals.PrintSink(10))
    b = run_globals.prepare_globals(template, proxies, run_globals.PrintSink(10))
    assert a is not b and a["__builtins__"] is not b["__builtins__"]
    assert a["__builtins__"] is not template
    assert a["_getattr_"].__self__ is not b["_getattr_"].__self__  # fresh guards
    for name in ("open", "listdir", "secret"):
        assert name not in a["__builtins__"]  # only the call adds them
    run_globals.bind_call(a, print, print, ["k"])
    assert str(a["__builtins__"]["secret"]("k")) == "[vault:k]"
    assert "open" not in b["__builtins__"] and "open" not in template


class _Mine:
    pass


@pytest.mark.parametrize(
    ("ob", "name"),
    [
        ({}, "get"),
        ([], "append"),
        ("x", "upper"),
        ("x", "format"),
        ("x", "format_map"),
        ("x", "_formatter_parser"),
        (1, "real"),
        (1, "__class__"),
        ({}, "__class__"),
        ([], "no_such_attr"),
        (str, "format"),
        (ValueError("e"), "obj"),
        (ValueError("e"), "args"),
        (_Mine(), "x"),
        (True, "to_bytes"),
    ],
)
def test_getattr_fast_path_agrees_with_the_full_check(ob: Any, name: str) -> None:
    guards = policy_guards.Guards()
    saved = policy_guards._PLAIN_ATTRS
    try:
        fast = _outcome(lambda: guards.getattr(ob, name))
        policy_guards._PLAIN_ATTRS = {}  # every lookup takes the full check
        full = _outcome(lambda: guards.getattr(ob, name))
    finally:
        policy_guards._PLAIN_ATTRS = saved
    assert fast == full


def test_module_proxy_fast_path_agrees_with_the_full_check() -> None:
    proxies = build_proxies()
    fast = policy_guards.Guards(policy_guards.judge_modules(proxies))
    full = policy_guards.Guards()
    tried = 0
    for proxy in proxies.values():
        for name in [*vars(proxy), "_x", "__class__", "__dict__", "format", "no_such_name"]:
            got = _outcome(lambda p=proxy, n=name: fast.getattr(p, n))  # type: ignore[misc]
            assert got == _outcome(lambda p=proxy, n=name: full.getattr(p, n)), name  # type: ignore[misc]
            tried += 1
    assert tried > 300


def test_module_proxy_attributes_are_judged_when_the_guards_are_made() -> None:
    refused = SimpleNamespace(fmt=str.format, real=eval, fine=len, value=3)
    guards = policy_guards.Guards(policy_guards.judge_modules({"m": refused}))

    def no_more_judging(value: Any, name: str) -> Any:
        raise AssertionError(f"{name} judged during the run")

    guards._judge = no_more_judging  # what passed was judged before: the fast path
    assert guards.getattr(refused, "fine") is len and guards.getattr(refused, "value") == 3
    for name in ("fmt", "real"):  # refused then: not on the fast path, still refused
        with pytest.raises(AssertionError, match="judged during the run"):
            guards.getattr(refused, name)
    with pytest.raises(AttributeError):
        policy_guards.Guards().getattr(refused, "fmt")
    other = SimpleNamespace(fine=len)  # not one of the run's module proxies
    with pytest.raises(AssertionError):
        guards.getattr(other, "fine")


def test_a_call_s_guards_hold_the_module_proxies_judged_by_the_helper() -> None:
    ctx, _ = prepare()
    try:
        call = prepare_call_globals(ctx, dict(ctx.builtins))
        assert call.globals["_getattr_"].__self__._modules is ctx.judged
        assert ctx.judged is not None
        assert set(ctx.judged) == {id(p) for p in ctx.proxies.values()}
    finally:
        os.close(ctx.devnull)
        for fd in ctx.read_fds:
            os.close(fd)


def test_fast_path_names_are_public_and_not_special() -> None:
    for names in policy_guards._PLAIN_ATTRS.values():
        assert not any(n.startswith("_") for n in names)
        assert not names & policy_guards._SPECIAL_ATTRS
    assert "format" not in policy_guards._PLAIN_ATTRS[str]


def test_str_format_still_resolves_fields_through_the_guards() -> None:
    guards = policy_guards.Guards()
    fmt = guards.getattr("{0.__class__}", "format")
    with pytest.raises(AttributeError):
        fmt(1)
    assert guards.getattr("{0}-{1[a]}", "format")(1, {"a": 2}) == "1-2"


def test_write_fast_path() -> None:
    guards = policy_guards.Guards()
    for ob in ({}, [], set(), bytearray(), deque(), ChainMap()):
        assert guards.write(ob) is ob
    for ob in (dict, list, (1,), "s", json):
        assert isinstance(guards.write(ob), policy_guards._DeniedWrite)


def _unpacked(fn: Any, value: Any, spec: dict[str, Any], targets: int) -> Any:
    """What `a, b = fn(value)` (`targets` names) binds, or the error it raises (a
    TypeError's text differs: "cannot unpack non-iterable int object" where
    RestrictedPython's list() says "'int' object is not iterable")."""
    try:
        if targets == 2:
            first, second = fn(value, spec, iter)
            return ("bound", first, second)
        (only,) = fn(value, spec, iter)
        return ("bound", only)
    except ValueError as exc:
        return ("raised", ValueError, str(exc))
    except TypeError:
        return ("raised", TypeError)


def _countdown(n: int) -> Any:
    yield from range(n, 0, -1)


class _Pair:
    def __iter__(self) -> Any:
        return iter(("x", "y"))


@pytest.mark.parametrize(
    ("value", "spec"),
    [
        ((1, 2), {"childs": (), "min_len": 2}),
        ([1], {"childs": (), "min_len": 2}),
        ("ab", {"childs": (), "min_len": 2}),
        ("abc", {"childs": (), "min_len": 2}),
        ({"k": 1, "j": 2}, {"childs": (), "min_len": 2}),
        (_Pair(), {"childs": (), "min_len": 2}),
        (3, {"childs": (), "min_len": 2}),
        ((1, (2, 3)), {"childs": ((1, {"childs": (), "min_len": 2}),), "min_len": 2}),
    ],
)
def test_unpack_shortcuts_match_restrictedpython(value: Any, spec: dict[str, Any]) -> None:
    for targets in (1, 2):
        ours = _unpacked(policy_guards._unpack_sequence, value, spec, targets)
        assert ours == _unpacked(guarded_unpack_sequence, value, spec, targets)

    def each(fn: Any) -> list[Any]:
        """What `for a, b in fn([value, value])` binds, up to its first error."""
        out: list[Any] = []
        try:
            for item in fn([value, value], spec, iter):
                out.append(_unpacked(lambda v, s, g: v, item, spec, 2))
                if out[-1][0] == "raised":
                    break
        except TypeError:
            out.append(("raised", TypeError))
        return out

    assert each(policy_guards._iter_unpack_sequence) == each(guarded_iter_unpack_sequence)


def test_unpack_shortcut_binds_what_restrictedpython_binds_from_iterators() -> None:
    spec = {"childs": (), "min_len": 2}
    for n in (1, 2, 3):  # a fresh iterator each time: both consume it
        ours = _unpacked(policy_guards._unpack_sequence, _countdown(n), spec, 2)
        assert ours == _unpacked(guarded_unpack_sequence, _countdown(n), spec, 2)


def test_result_frames() -> None:
    doc = b'{"ok": true}'
    framed = frame(doc)
    assert unframe(framed) == doc
    assert unframe(framed + b"junk") == doc
    for cut in range(len(framed)):
        assert unframe(framed[:cut]) is None


def _outcome(fn: Any) -> tuple[Any, ...]:
    try:
        value = fn()
    except Exception as exc:
        return ("raised", type(exc))
    if callable(value):
        return ("callable", type(value), getattr(value, "__name__", None))
    return ("value", value)

"""Our RestrictedPython policy: restricted compile plus the run-time guards.

The compile step (RestrictedPython's transformer) rewrites attribute, item,
iteration and write access into calls to the guards defined here. Every run
gets a fresh globals dict with a fresh, minimal builtins dict (never
RestrictedPython's shared `safe_builtins`); modules are read-only proxies
(forge.modules); `open` is the path gate's; `str.format` goes through a
formatter that resolves fields with the same guards. This is layer 2 of 4.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import ast
import builtins
import importlib
import operator
import string
from collections import ChainMap, UserDict, UserList, UserString, deque
from collections.abc import Callable, Mapping
from decimal import Context as DecimalContext
from types import CodeType, SimpleNamespace
from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import (
    INSPECT_ATTRIBUTES,
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

from forge.findings import Finding
from forge.lint import INSPECT_ATTRS
from forge.schema import secret_key

BLOCKED_ATTRS = frozenset(INSPECT_ATTRIBUTES) | INSPECT_ATTRS
SAFE_BUILTINS = [
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "complex",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "oct",
    "ord",
    "pow",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "EOFError",
    "Exception",
    "FileExistsError",
    "FileNotFoundError",
    "IndexError",
    "IsADirectoryError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotADirectoryError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PermissionError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "TimeoutError",
    "TypeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "ValueError",
    "ZeroDivisionError",
]
WRITABLE_TYPES = (dict, list, set, bytearray, deque, ChainMap, UserDict, UserList, DecimalContext)
_INPLACE: Mapping[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}
_MISSING = object()
# Names the guards treat specially (refused, or routed through the safe formatter).
_FORMAT_ATTRS = frozenset({"format", "format_map"})
_SPECIAL_ATTRS = BLOCKED_ATTRS | _FORMAT_ATTRS | {"obj"}
# Exact built-in types that are not a type, an exception or a string.Formatter:
# for them the full check below comes down to "a public name, not one of
# _SPECIAL_ATTRS", so `getattr` answers from a precomputed set of those names.
_PLAIN_ATTRS: Mapping[type, frozenset[str]] = {
    cls: frozenset(n for n in dir(cls) if not n.startswith("_") and n not in _SPECIAL_ATTRS)
    for cls in (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, complex, bool)
}
_builtin_getattr = builtins.getattr
# Exact types `write` allows (all in WRITABLE_TYPES, none a type): the fast path.
_WRITABLE_EXACT = frozenset({dict, list, set, bytearray, deque})


class CompileFailed(Exception):
    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(str(f) for f in findings))
        self.findings = findings


class OutputTooLarge(Exception):
    """The tool printed more than the cap allows."""


class ForgePolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer plus two things real tools need.

    - `x: int = 0` (annotated names; dataclasses need them). The annotation is an
      ordinary expression and is transformed like any other.
    - `d[k] += 1` and `self.n += 1`, rewritten to `_aug_item_(d, k, "+=", 1)` /
      `_aug_attr_(self, "n", "+=", 1)`, which read and write through the guards.
    """

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if not isinstance(node.target, ast.Name):
            self.error(node, "Only plain names may be annotated.")
            return node
        return self.node_contents_visit(node)  # type: ignore[no-any-return]

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        target = node.target
        if not isinstance(target, ast.Subscript | ast.Attribute):
            return super().visit_AugAssign(node)  # type: ignore[no-any-return]
        op = ast.Constant(IOPERATOR_TO_STR[type(node.op)])
        obj = self.visit(target.value)
        value = self.visit(node.value)
        if isinstance(target, ast.Attribute):
            if target.attr.startswith("_") or target.attr in BLOCKED_ATTRS:
                self.error(node, f'"{target.attr}" is an invalid attribute name.')
                return node
            args = [obj, ast.Constant(target.attr), op, value]
            func = "_aug_attr_"
        else:
            if isinstance(target.slice, ast.Slice):
                self.error(node, "Augmented assignment of slices is not allowed.")
                return node
            args = [obj, self.visit(target.slice), op, value]
            func = "_aug_item_"
        new = ast.Expr(ast.Call(func=ast.Name(func, ast.Load()), args=args, keywords=[]))
        copy_locations(new, node)
        return new


def compile_tool(source: str, restricted: bool = True) -> CodeType:
    """Compile tool source with our RestrictedPython policy; raises CompileFailed.

    Done here rather than via `compile_restricted_exec`, whose final compile()
    inherits RestrictedPython's own `from __future__ import annotations` and so
    turns every annotation into a string (which breaks dataclasses).
    """
    try:
        tree = ast.parse(source, "<tool>", "exec")
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        raise CompileFailed([Finding(line, 0, "C001", f"syntax error: {exc}")]) from None
    if not restricted:  # layer tests only: shows what the other layers stop alone
        return compile(tree, "<tool>", "exec", dont_inherit=True)
    errors: list[str] = []
    ForgePolicy(errors, [], {}).visit(tree)
    if errors:
        findings = []
        for err in errors:
            line = 1
            if err.startswith("Line ") and ":" in err:
                head, _, rest = err.partition(":")
                line = int(head[5:]) if head[5:].isdigit() else 1
                err = rest.strip()
            findings.append(Finding(line, 0, "C001", err))
        raise CompileFailed(findings)
    return compile(tree, "<tool>", "exec", dont_inherit=True)


class _DeniedWrite:
    """What `_write_` returns for objects a tool may not modify."""

    __slots__ = ("_name",)

    def __init__(self, ob: Any) -> None:
        object.__setattr__(self, "_name", type(ob).__name__)

    def _deny(self, *args: Any) -> None:
        raise TypeError(f"tools may not modify {self._name} objects")

    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _deny  # type: ignore[assignment]


class _SafeFormatter(string.Formatter):
    """str.format whose fields go through the guards (CVE-2023-41039)."""

    def __init__(self, getattr_: Callable[..., Any], getitem_: Callable[..., Any]) -> None:
        self._getattr = getattr_
        self._getitem = getitem_

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attr, key in rest:
            obj = self._getattr(obj, key) if is_attr else self._getitem(obj, key)
        return obj, first


class Guards:
    """The run-time guards of one run; `tool_classes` are classes the tool defined."""

    def __init__(self) -> None:
        self.tool_classes: set[type] = set()
        self.formatter = _SafeFormatter(self.getattr, self.getitem)

    def getattr(self, ob: Any, name: Any, default: Any = _MISSING) -> Any:
        allowed = _PLAIN_ATTRS.get(type(ob))
        if allowed is not None and type(name) is str and name in allowed:
            if default is _MISSING:
                return _builtin_getattr(ob, name)
            return _builtin_getattr(ob, name, default)
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_") or name in BLOCKED_ATTRS:
            raise AttributeError(f"attribute {name!r} is not accessible to tools")
        if name in _FORMAT_ATTRS:
            return self.format_attr(ob, name, default)
        if name == "obj" and isinstance(ob, BaseException):  # CVE-2024-47532
            raise AttributeError("exception attribute 'obj' is not accessible to tools")
        if isinstance(ob, string.Formatter) or (
            isinstance(ob, type) and issubclass(ob, string.Formatter)
        ):
            raise AttributeError("string.Formatter is not available to tools")
        if default is _MISSING:
            return builtins.getattr(ob, name)
        return builtins.getattr(ob, name, default)

    def format_attr(self, ob: Any, name: str, default: Any) -> Any:
        """`format` / `format_map` (issue 9): on a str or a UserString (or any
        subclass of either) they are the guarded formatter over the text; on a
        class of those, refused; on anything else, only a tool class's own
        method (never a library method that may call the real `str.format`)."""
        if isinstance(ob, str | UserString):
            text = str.__str__(ob) if isinstance(ob, str) else str(ob.data)
            fmt = self.formatter
            if name == "format":
                return lambda *a, **kw: fmt.vformat(text, a, kw)
            return lambda mapping: fmt.vformat(text, (), mapping)
        cls = ob if isinstance(ob, type) else type(ob)
        if isinstance(ob, type) and issubclass(ob, str | UserString):
            raise AttributeError("use 'text'.format(...) on a string instead of str.format")
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if owner is not None and owner not in self.tool_classes:
            raise AttributeError(f"{cls.__name__}.{name} is not accessible to tools")
        if default is _MISSING:
            return builtins.getattr(ob, name)
        return builtins.getattr(ob, name, default)

    @staticmethod
    def getitem(ob: Any, key: Any) -> Any:
        return ob[key]

    def write(self, ob: Any) -> Any:
        cls = type(ob)
        if cls in _WRITABLE_EXACT:
            return ob
        if isinstance(ob, WRITABLE_TYPES) and not isinstance(ob, type):
            return ob
        if (isinstance(ob, type) and ob in self.tool_classes) or any(
            c in self.tool_classes for c in cls.__mro__
        ):
            return ob
        return _DeniedWrite(ob)

    def aug_item(self, ob: Any, key: Any, op: str, value: Any) -> None:
        self.write(ob)[key] = _inplacevar(op, self.getitem(ob, key), value)

    def aug_attr(self, ob: Any, name: str, op: str, value: Any) -> None:
        setattr(self.write(ob), name, _inplacevar(op, self.getattr(ob, name), value))

    def make_class(self, name: str, bases: tuple[Any, ...], ns: dict[str, Any], **kw: Any) -> Any:
        meta: type = type
        for base in bases:
            bmeta = type(base)
            if issubclass(bmeta, meta):
                meta = bmeta
        cls = meta(name, bases, ns, **kw)
        self.tool_classes.add(cls)
        return cls


class PrintSink:
    """Collects everything a tool prints, up to `cap` characters."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0

    def text(self) -> str:
        return "".join(self.parts)

    def collector(self, getattr_: Any = None) -> _PrintCollector:
        return _PrintCollector(self, getattr_)


class _PrintCollector:
    def __init__(self, sink: PrintSink, getattr_: Any) -> None:
        self.sink = sink
        self.getattr = getattr_
        self.txt: list[str] = []

    def write(self, text: str) -> None:
        self.sink.size += len(text)
        if self.sink.size > self.sink.cap:
            raise OutputTooLarge(f"the tool printed more than {self.sink.cap} characters")
        self.txt.append(text)
        self.sink.parts.append(text)

    def __call__(self) -> str:
        return "".join(self.txt)

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        if kwargs.get("file") is None:
            kwargs["file"] = self
        elif self.getattr is not None:
            self.getattr(kwargs["file"], "write")
        print(*objects, **kwargs)


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    fn = _INPLACE.get(op)
    if fn is None:
        raise SyntaxError(f"unsupported in-place operator {op}")
    return fn(x, y)


def _apply(f: Any, *args: Any, **kwargs: Any) -> Any:
    return f(*args, **kwargs)


def _unpack_sequence(it: Any, spec: Mapping[str, Any], getiter: Any) -> Any:
    """RestrictedPython's guarded_unpack_sequence; without nested targets and with
    the plain `iter` guard (ours) it is exactly `list(it)`, so that is done directly."""
    if getiter is iter and not spec["childs"]:
        return list(it)
    return guarded_unpack_sequence(it, spec, getiter)


def _iter_unpack_sequence(it: Any, spec: Mapping[str, Any], getiter: Any) -> Any:
    """RestrictedPython's guarded_iter_unpack_sequence (a generator yielding
    `guarded_unpack_sequence(item)` for each item); same shortcut as above."""
    if getiter is iter and not spec["childs"]:
        return map(list, it)
    return guarded_iter_unpack_sequence(it, spec, getiter)


# Modules that allowed C functions import lazily through the frame's __import__
# (datetime.strptime -> _strptime, datetime.strftime -> time). CPython's
# PyImport_Import passes an empty *list* as fromlist; compiled import
# statements pass None or a tuple, so tool code can never take this path.
INTERNAL_IMPORTS = frozenset({"_strptime", "time"})


def make_import(proxies: Mapping[str, SimpleNamespace]) -> Callable[..., Any]:
    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level == 0 and name in INTERNAL_IMPORTS and type(fromlist) is list and not fromlist:
            return importlib.import_module(name)
        if level != 0 or name not in proxies:
            raise ImportError(f"import of {name!r} is not allowed")
        return proxies[name]

    return guarded_import


def make_secret_getter(secrets: Mapping[str, str]) -> Callable[[str], str]:
    # Secret names are case-insensitive everywhere (one rule: schema.secret_key).
    values = {secret_key(k): v for k, v in secrets.items()}

    def secret(name: str) -> str:
        key = secret_key(name) if isinstance(name, str) else None
        if key is None or key not in values:
            raise KeyError(
                f"secret {name!r} is not available: declare it in SECRETS and store it in the vault"
            )
        return values[key]

    return secret


def safe_builtins() -> dict[str, Any]:
    """The template of plain builtins a tool gets; copied, never shared, per run."""
    return {name: getattr(builtins, name) for name in SAFE_BUILTINS}


def make_globals(
    template: Mapping[str, Any],
    proxies: Mapping[str, SimpleNamespace],
    open_fn: Callable[..., Any],
    listdir_fn: Callable[..., Any],
    secrets: Mapping[str, str],
    sink: PrintSink,
) -> dict[str, Any]:
    """A fresh globals dict (with fresh builtins) for one restricted run."""
    glb = prepare_globals(template, proxies, sink)
    bind_call(glb, open_fn, listdir_fn, secrets)
    return glb


def prepare_globals(
    template: Mapping[str, Any], proxies: Mapping[str, SimpleNamespace], sink: PrintSink
) -> dict[str, Any]:
    """The part of a run's fresh globals that does not depend on the call: new
    guards, a new builtins dict, the import hook. A sandbox child builds it while
    it waits for its one call; `bind_call` then adds what the call decides."""
    guards = Guards()
    safe = dict(template)
    safe["__import__"] = make_import(proxies)
    safe["__build_class__"] = builtins.__build_class__
    return {
        "__builtins__": safe,
        "__name__": "tool",
        "__metaclass__": guards.make_class,
        "_getattr_": guards.getattr,
        "_getitem_": operator.getitem,
        "_getiter_": iter,
        "_write_": guards.write,
        "_inplacevar_": _inplacevar,
        "_aug_item_": guards.aug_item,
        "_aug_attr_": guards.aug_attr,
        "_apply_": _apply,
        "_print_": sink.collector,
        "_unpack_sequence_": _unpack_sequence,
        "_iter_unpack_sequence_": _iter_unpack_sequence,
    }


def bind_call(
    glb: dict[str, Any],
    open_fn: Callable[..., Any],
    listdir_fn: Callable[..., Any],
    secrets: Mapping[str, str],
) -> None:
    """Add the call's path gate and secrets to globals from `prepare_globals`."""
    safe = glb["__builtins__"]
    safe["open"] = open_fn
    safe["listdir"] = listdir_fn
    safe["secret"] = make_secret_getter(secrets)


def make_unrestricted_globals() -> dict[str, Any]:
    """Full Python builtins: only for tests that show the process layers alone."""
    return {"__builtins__": dict(vars(builtins)), "__name__": "tool"}

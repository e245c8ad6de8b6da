"""The linter: a pure AST pass that rejects what a tool has no business doing.

It is the first of four layers (lint, restricted compile + guards, a confined
process, the path gate) and gives the model actionable findings; it is not the
boundary on its own. Codes: F00x size/syntax (F005, F006: text that reads
otherwise than it runs, see forge.lint_text), F01x imports, F02x names and
reflection, F03x statements, F04x tool format (see forge.schema), F048 a `net`
call to a literal host the tool does not declare (see forge.lint_net).
"""

from __future__ import annotations

import ast

from forge import lint_net, lint_text
from forge.findings import Finding
from forge.modules import ALLOWED_NAMES, allowed_modules_text
from forge.schema import inspect_tool

MAX_SOURCE_BYTES = 64 * 1024
MAX_LINES = 1500
MAX_NODES = 20_000
MAX_DEPTH = 40
MAX_LITERAL_CHARS = 16 * 1024

REFLECTION = frozenset(
    [
        "exec",
        "eval",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "dir",
        "type",
        "super",
        "object",
        "breakpoint",
        "input",
        "help",
        "memoryview",
        "exit",
        "quit",
    ]
)
# Attributes that reach frames, code or interpreter internals (CVE-2023-37271 and kin).
INSPECT_ATTRS = frozenset(
    [
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "gi_running",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "tb_frame",
        "tb_next",
        "f_back",
        "f_builtins",
        "f_code",
        "f_globals",
        "f_locals",
        "f_trace",
        "f_generator",
        "co_code",
        "func_globals",
        "func_code",
        "im_func",
        "im_self",
        "mro",
        "obj",
    ]
)
# `__init__` is the one dunder a small class legitimately needs (RestrictedPython allows it).
ALLOWED_DUNDER_DEFS = frozenset({"__init__"})


def _f(node: ast.AST, code: str, message: str) -> Finding:
    return Finding(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), code, message)


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.nodes = 0
        self.depth = 0
        self.too_deep = False
        self.class_depth = 0

    def generic_visit(self, node: ast.AST) -> None:
        self.nodes += 1
        self.depth += 1
        if self.depth > MAX_DEPTH and not self.too_deep:
            self.too_deep = True
            self.findings.append(_f(node, "F003", f"code nested deeper than {MAX_DEPTH} levels"))
        super().generic_visit(node)
        self.depth -= 1

    def add(self, node: ast.AST, code: str, message: str) -> None:
        self.findings.append(_f(node, code, message))

    # imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            if alias.asname and alias.asname.startswith("_"):
                self.add(node, "F020", f"alias {alias.asname!r} may not start with '_'")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(node, "F011", "relative imports are not allowed")
        elif node.module is not None and self._check_module(node, node.module):
            for alias in node.names:
                if alias.name == "*":
                    self.add(
                        node,
                        "F011",
                        f"`from {node.module} import *` is not allowed; import the names you need",
                    )
                elif alias.name not in ALLOWED_NAMES[node.module]:
                    self.add(
                        node,
                        "F012",
                        f"{node.module}.{alias.name} is not available to "
                        f"tools; allowed: {', '.join(sorted(ALLOWED_NAMES[node.module]))}",
                    )
        self.generic_visit(node)

    def _check_module(self, node: ast.AST, module: str) -> bool:
        if module in ALLOWED_NAMES:
            return True
        self.add(
            node,
            "F010",
            f"import of {module!r} is not allowed; tools may import only: "
            f"{allowed_modules_text()}. Files: open(), os, os.path or pathlib "
            "with paths inside the workspace",
        )
        return False

    # names and attributes
    def visit_Name(self, node: ast.Name) -> None:
        self._check_identifier(node, node.id)
        if node.id in REFLECTION:
            self.add(
                node,
                "F022",
                f"{node.id!r} is not available to tools (no reflection, "
                "dynamic code or interactive input)",
            )
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("_"):
            kind = "dunder" if node.attr.startswith("__") else "private"
            self.add(
                node,
                "F020",
                f"{kind} attribute {node.attr!r} is not allowed; use only public attributes",
            )
        elif node.attr in INSPECT_ATTRS:
            self.add(
                node,
                "F023",
                f"attribute {node.attr!r} reaches interpreter internals and is not allowed",
            )
        self.generic_visit(node)

    def _check_identifier(self, node: ast.AST, name: str) -> None:
        if name.startswith("_") and name != "_":
            self.add(node, "F020", f"name {name!r} may not start with '_'; rename it")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if not (self.class_depth and node.name in ALLOWED_DUNDER_DEFS):
            self._check_identifier(node, node.name)
        for arg in [
            *node.args.posonlyargs,
            *node.args.args,
            *node.args.kwonlyargs,
            node.args.vararg,
            node.args.kwarg,
        ]:
            if arg is not None:
                self._check_identifier(arg, arg.arg)
        saved, self.class_depth = self.class_depth, 0
        self.generic_visit(node)
        self.class_depth = saved

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            self._check_identifier(arg, arg.arg)
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_identifier(node, node.name)
        if node.keywords:
            self.add(node, "F024", "class keywords (metaclass=...) are not allowed")
        self.class_depth += 1
        self.generic_visit(node)
        self.class_depth -= 1

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._check_identifier(node, node.name)
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None:
            self._check_identifier(node, node.arg)
        self.generic_visit(node)

    # statements
    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, "F030", "`global` is not allowed; pass values as arguments and return them")
        self.generic_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.add(node, "F030", "`nonlocal` is not allowed; return values instead")
        self.generic_visit(node)

    def visit_TryStar(self, node: ast.AST) -> None:
        self.add(node, "F031", "`except*` is not allowed (CVE-2025-22153); use plain `except`")
        self.generic_visit(node)

    def _no_async(self, node: ast.AST) -> None:
        self.add(node, "F031", "async code is not allowed; write plain synchronous functions")
        self.generic_visit(node)

    visit_AsyncFunctionDef = _no_async
    visit_Await = _no_async
    visit_AsyncFor = _no_async
    visit_AsyncWith = _no_async

    def visit_comprehension(self, node: ast.comprehension) -> None:
        # `(j for i in x async for j in i)` is an async generator even inside a plain
        # `def`: no Async* node marks it (session 32's attacker pass)
        if node.is_async:
            self._no_async(node)
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str | bytes) and len(node.value) > MAX_LITERAL_CHARS:
            self.add(
                node,
                "F004",
                f"literal longer than {MAX_LITERAL_CHARS} characters; "
                "read large data from a workspace file",
            )
        self.generic_visit(node)


def lint(source: str) -> list[Finding]:
    """All findings for `source`, sorted by position; empty means it may be compiled."""
    if not isinstance(source, str):
        return [Finding(1, 0, "F002", "source must be text")]
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        return [Finding(1, 0, "F002", f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES}")]
    if source.count("\n") + 1 > MAX_LINES:
        return [Finding(1, 0, "F002", f"source has more than {MAX_LINES} lines")]
    if "\x00" in source:
        return [Finding(1, 0, "F001", "source contains a NUL byte")]
    hidden = lint_text.hidden_findings(source)
    if hidden:
        return hidden
    try:
        tree = ast.parse(source, filename="<tool>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        col = getattr(exc, "offset", None) or 0
        msg = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
        return [Finding(line, col, "F001", f"syntax error: {msg}")]
    visitor = _Visitor()
    try:
        visitor.visit(tree)
    except RecursionError:
        return [Finding(1, 0, "F003", f"code nested deeper than {MAX_DEPTH} levels")]
    findings = visitor.findings + lint_text.identifier_findings(tree, source)
    if visitor.nodes > MAX_NODES:
        findings.append(Finding(1, 0, "F002", f"source has more than {MAX_NODES} syntax nodes"))
    _, format_findings = inspect_tool(tree)
    findings.extend(format_findings)
    findings.extend(lint_net.check(tree))
    return sorted(set(findings), key=lambda f: (f.line, f.col, f.code, f.message))

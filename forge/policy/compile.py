"""Layer 2, compile time: RestrictedPython's transformer with our two additions
(`ForgePolicy`), and `compile_tool`. The transformer rewrites attribute, item,
iteration and write access into calls to the run-time guards (forge.policy.guards).
"""

from __future__ import annotations

import ast
from types import CodeType
from typing import cast

from RestrictedPython.transformer import (
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

from forge.findings import Finding
from forge.policy.guards import BLOCKED_ATTRS


class CompileFailed(Exception):
    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(str(f) for f in findings))
        self.findings = findings


class ForgePolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer plus two things real tools need.

    - `x: int = 0` (annotated names; dataclasses need them). The annotation is an
      ordinary expression and is transformed like any other.
    - `d[k] += 1` and `self.n += 1`, rewritten to `_aug_item_(d, k, "+=", 1)` /
      `_aug_attr_(self, "n", "+=", 1)`, which read and write through the guards.
    """

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        # an `async for` clause makes an async generator anywhere, even in a plain
        # `def` (the linter refuses it too; this layer must not rely on it)
        if node.is_async:
            self.error(node, "Async comprehensions are not allowed.")
            return node
        return cast(ast.AST, super().visit_comprehension(node))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if not isinstance(node.target, ast.Name):
            self.error(node, "Only plain names may be annotated.")
            return node
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        target = node.target
        if not isinstance(target, ast.Subscript | ast.Attribute):
            return cast(ast.AST, super().visit_AugAssign(node))
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

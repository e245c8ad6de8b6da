"""The tool format: one `run(...)` with annotated parameters, and its JSON schema.

A tool module has exactly one top-level `def run(...)`; every parameter is
annotated with str, int, float, bool, list, dict (optionally `list[X]`,
`dict[str, X]`, `Optional[X]` or `X | None`); the docstring's first line is the
description; an optional module-level `SECRETS = ["vault_name", ...]` literal
lists the vault entries the tool needs; an optional `NETWORK = ["host", "host:port"]`
literal lists the hosts its `net` calls may reach (both are part of the source,
so of its pinned hash: a changed declaration needs a new save). `Args:` lines in the docstring
(`name: text`) become parameter descriptions.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from forge.findings import Finding
from forge.net_rules import parse_host

# The one rule for secret names, in a tool's SECRETS and in the vault (bridge imports
# it): a letter, then letters, digits and "_", at most 64; case-insensitive, so
# GITHUB_TOKEN and github_token name one secret (`secret_key` is the comparison key).
SECRET_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$", re.ASCII)


def secret_key(name: str) -> str:
    return name.upper()


_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_CONTAINERS = {"list": "array", "List": "array", "dict": "object", "Dict": "object"}
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class ToolFormatError(ValueError):
    """The source is not a valid tool; `findings` says why."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__("; ".join(str(f) for f in findings))
        self.findings = findings


@dataclass(frozen=True, slots=True)
class ToolInfo:
    description: str
    schema: dict[str, Any]
    secrets: tuple[str, ...]
    network: tuple[str, ...] = ()  # NETWORK: "host" or "host:port", as declared


def _finding(node: ast.AST | None, code: str, message: str) -> Finding:
    return Finding(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), code, message)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _annotation(node: ast.expr, depth: int = 0) -> dict[str, Any] | None:
    """JSON schema fragment for an annotation, or None when unsupported."""
    if depth > 4:
        return None
    if isinstance(node, ast.Name):
        if node.id in _SCALARS:
            return {"type": _SCALARS[node.id]}
        if node.id in _CONTAINERS:
            return {"type": _CONTAINERS[node.id]}
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
        rest = [s for s in sides if not _is_none(s)]
        if len(rest) == 1 and len(sides) == 2:
            return _nullable(_annotation(rest[0], depth + 1))
        return None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        head = node.value.id
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head == "Optional" and len(args) == 1:
            return _nullable(_annotation(args[0], depth + 1))
        if head == "Union" and len(args) == 2 and sum(map(_is_none, args)) == 1:
            other = next(a for a in args if not _is_none(a))
            return _nullable(_annotation(other, depth + 1))
        if head in ("list", "List") and len(args) == 1:
            items = _annotation(args[0], depth + 1)
            return None if items is None else {"type": "array", "items": items}
        if head in ("dict", "Dict") and len(args) == 2:
            key = args[0]
            values = _annotation(args[1], depth + 1)
            if isinstance(key, ast.Name) and key.id == "str" and values is not None:
                return {"type": "object", "additionalProperties": values}
        return None
    return None


def _nullable(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    out = dict(schema)
    out["type"] = [schema["type"], "null"]
    return out


def _arg_docs(doc: str) -> dict[str, str]:
    docs: dict[str, str] = {}
    in_args = False
    for raw in doc.splitlines():
        line = raw.strip()
        if line.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            m = re.match(r"^([a-z_][a-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.+)$", line, re.I)
            if m:
                docs[m.group(1)] = m.group(2)
            elif not line:
                in_args = False
    return docs


def _check_run(fn: ast.FunctionDef, findings: list[Finding]) -> tuple[str, dict[str, Any]]:
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs:
        findings.append(
            _finding(fn, "F041", "run() may not take *args, **kwargs or positional-only params")
        )
    doc = ast.get_docstring(fn) or ""
    description = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    if not description:
        findings.append(
            _finding(fn, "F042", "run() needs a docstring whose first line describes the tool")
        )
    arg_docs = _arg_docs(doc)
    params = a.args + a.kwonlyargs
    defaults: list[ast.expr | None] = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    defaults += list(a.kw_defaults)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg, default in zip(params, defaults, strict=True):
        if arg.annotation is None:
            findings.append(
                _finding(
                    arg,
                    "F043",
                    f"parameter {arg.arg!r} needs a type annotation "
                    "(str, int, float, bool, list, dict, or Optional[...])",
                )
            )
            continue
        prop = _annotation(arg.annotation)
        if prop is None:
            findings.append(
                _finding(
                    arg,
                    "F044",
                    f"parameter {arg.arg!r}: unsupported annotation "
                    f"{ast.unparse(arg.annotation)!r}; use str, int, float, bool, list[X], "
                    "dict[str, X] or Optional[X]",
                )
            )
            continue
        if arg.arg in arg_docs:
            prop["description"] = arg_docs[arg.arg]
        if default is None:
            required.append(arg.arg)
        else:
            try:
                prop["default"] = ast.literal_eval(default)
            except ValueError:
                findings.append(
                    _finding(default, "F045", f"default of {arg.arg!r} must be a literal value")
                )
        properties[arg.arg] = prop
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return description, schema


def _secrets(node: ast.Assign, findings: list[Finding]) -> tuple[str, ...]:
    value = node.value
    ok = isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    )
    if not ok:
        findings.append(
            _finding(node, "F046", 'SECRETS must be a literal list of strings, e.g. ["api_key"]')
        )
        return ()
    names = tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    for name in names:
        if not SECRET_NAME_RE.fullmatch(name):
            findings.append(_finding(node, "F046", f"bad secret name {name!r}"))
    return names


def _network(node: ast.Assign, findings: list[Finding]) -> tuple[str, ...]:
    value = node.value
    ok = isinstance(value, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
    )
    if not ok:
        findings.append(
            _finding(
                node, "F047", 'NETWORK must be a literal list of hosts, e.g. ["api.example.com"]'
            )
        )
        return ()
    hosts = tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    for host in hosts:
        if parse_host(host) is None or host != host.strip().lower():
            findings.append(
                _finding(
                    node, "F047", f"bad NETWORK entry {host!r}: use a lower-case host or host:port"
                )
            )
    return hosts


def inspect_tool(tree: ast.Module) -> tuple[ToolInfo | None, list[Finding]]:
    """Check the tool format of a parsed module; return its info and findings."""
    findings: list[Finding] = []
    runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    secrets: tuple[str, ...] = ()
    network: tuple[str, ...] = ()
    for node in tree.body:
        names = (
            {t.id for t in node.targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.Assign)
            else set()
        )
        if "SECRETS" in names:
            secrets = _secrets(node, findings)  # type: ignore[arg-type]
        if "NETWORK" in names:
            network = _network(node, findings)  # type: ignore[arg-type]
    if len(runs) != 1:
        msg = "define exactly one top-level function `def run(...)`"
        findings.append(_finding(runs[1] if runs else None, "F040", f"{msg} (found {len(runs)})"))
        return None, findings
    description, schema = _check_run(runs[0], findings)
    if findings:
        return None, findings
    return ToolInfo(description, schema, secrets, network), findings


def describe_tool(source: str) -> ToolInfo:
    """ToolInfo of a source; raises ToolFormatError (syntax errors included)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ToolFormatError(
            [Finding(exc.lineno or 1, exc.offset or 0, "F001", f"syntax error: {exc.msg}")]
        ) from None
    info, findings = inspect_tool(tree)
    if info is None:
        raise ToolFormatError(findings)
    return info


def tool_schema(source: str) -> dict[str, Any]:
    """The JSON schema of the tool's `run` parameters."""
    return describe_tool(source).schema


def _type_ok(value: Any, types: str | list[str]) -> bool:
    for t in [types] if isinstance(types, str) else types:
        if isinstance(value, _JSON_TYPES[t]) and not (
            t in ("integer", "number") and isinstance(value, bool)
        ):
            return True
    return False


def validate_params(schema: dict[str, Any], params: Any) -> list[str]:
    """Problems with `params` against a schema made by `tool_schema` (empty = fine)."""
    if not isinstance(params, dict):
        return ["arguments must be a JSON object"]
    props: dict[str, Any] = schema.get("properties", {})
    problems = [f"unknown argument {k!r}" for k in params if k not in props]
    problems += [f"missing argument {k!r}" for k in schema.get("required", []) if k not in params]
    for key, value in params.items():
        prop = props.get(key)
        if prop is not None and not _type_ok(value, prop["type"]):
            problems.append(f"argument {key!r} must be {prop['type']}, got {type(value).__name__}")
    return problems

"""Lint pass: `net` calls to a literal host the tool does not declare in NETWORK.

A tool may reach only the hosts its `NETWORK` list names (forge.net_rules); the
broker refuses any other at run time, so a call whose host is written in the
code (`net.get("https://other.example/x")`, `f"https://other.example/{q}"`)
and is not declared can never succeed. This pass reports it as F048, naming
the host, the declared ones and how to declare it. A URL whose host is computed
at run time is not judged here (the broker decides when the tool runs), nor is a
`NETWORK` that is not a literal list (F047 reports that).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from urllib.parse import urlsplit

from forge.findings import Finding
from forge.net_rules import listed, parse_host

NET_METHODS = frozenset({"get", "post"})
DEFAULT_PORTS = {"https": 443, "http": 80}


@dataclass(frozen=True, slots=True)
class Undeclared:
    """One `net` call whose literal host is not in NETWORK."""

    line: int
    col: int
    host: str  # as the broker names it: `host`, or `host:port` for an explicit port


def _prefix(node: ast.expr) -> tuple[str, bool]:
    """The constant start of a URL expression, and whether it is all constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, True
    if isinstance(node, ast.JoinedStr):
        text = ""
        for value in node.values:
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                return text, False
            text += value.value
        return text, True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, whole = _prefix(node.left)
        if not whole:
            return left, False
        right, whole = _prefix(node.right)
        return left + right, whole
    return "", False


def literal_host(node: ast.expr) -> tuple[str, str, int, int] | None:
    """(spelling, host, port, the scheme's default port) of a URL whose scheme and
    authority are written in the code; None when any of it is computed or it is
    not an http(s) URL."""
    try:
        text, whole = _prefix(node)
    except RecursionError:
        return None
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in DEFAULT_PORTS:
        return None
    ends = [i for i in (rest.find(c) for c in "/?#") if i >= 0]
    if not ends and not whole:
        return None  # the authority may go on in a computed part
    authority = rest[: min(ends)] if ends else rest
    try:
        parts = urlsplit(f"{scheme}://{authority}")
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host or parts.username is not None or parts.password is not None:
        return None  # the broker refuses these for another reason
    spelling = host if port is None else f"{host}:{port}"
    default = DEFAULT_PORTS[scheme.lower()]
    return spelling, host, port or default, default


def declared_network(tree: ast.Module) -> tuple[str, ...] | None:
    """The literal NETWORK entries, () when there is none, None when not literal."""
    found: tuple[str, ...] = ()
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        if not any(isinstance(t, ast.Name) and t.id == "NETWORK" for t in node.targets):
            continue
        value = node.value
        if not isinstance(value, ast.List | ast.Tuple) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            return None
        found = tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
    return found


def undeclared_calls(tree: ast.Module, network: tuple[str, ...]) -> list[Undeclared]:
    """The `net.get` / `net.post` calls whose literal host `network` does not allow."""
    rules = [r for r in (parse_host(e) for e in network) if r is not None]
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id == "net"):
            continue
        if node.func.attr not in NET_METHODS:
            continue
        url = node.args[0] if node.args else None
        url = url or next((k.value for k in node.keywords if k.arg == "url"), None)
        found = literal_host(url) if url is not None else None
        if found is None:
            continue
        spelling, host, port, default = found
        if not listed(rules, host, port, default):
            out.append(Undeclared(node.lineno, node.col_offset, spelling))
    return sorted(out, key=lambda u: (u.line, u.col))


def message(host: str, network: tuple[str, ...]) -> str:
    """F048's text: the host, what NETWORK declares, why it matters, how to declare it
    (the start carries the most: a person's notice shows only the first 120 characters)."""
    declared = ", ".join(network) if network else "none declared"
    return (
        f"host {host!r} is not in NETWORK ({declared}): this call would always be "
        f"refused; to allow it, declare it: NETWORK = {[*network, host]!r}"
    )


def check(tree: ast.Module) -> list[Finding]:
    """F048 for each `net` call to a literal host that NETWORK does not declare."""
    network = declared_network(tree)
    if network is None:
        return []
    return [
        Finding(
            u.line,
            u.col,
            "F048",
            message(u.host, network),
        )
        for u in undeclared_calls(tree, network)
    ]

"""Helpers for forge tests."""

from __future__ import annotations


def tool(body: str, params: str = "", imports: str = "") -> str:
    """Wrap a function body into a valid tool module."""
    lines = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f'{imports}\n\ndef run({params}):\n    """Test tool."""\n{lines}\n'

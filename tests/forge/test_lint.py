"""Layer 1: the linter and the tool format (pure, no processes)."""

from __future__ import annotations

import pytest

from forge.lint import MAX_SOURCE_BYTES, lint
from forge.names import BadName, bare_name, from_wire, is_wire_name, to_wire
from forge.schema import ToolFormatError, tool_schema, validate_params
from tests.forge.helpers import tool

GOOD = '''
import csv
from collections import Counter
SECRETS = ["poke_api_key"]

def run(path: str, limit: int = 5, tags: list[str] | None = None) -> dict:
    """Count words in a CSV column.

    Args:
        path: workspace-relative CSV file
        limit: how many words to return
    """
    counts = Counter()
    with open(path) as f:
        for row in csv.reader(f):
            counts[row[0]] += 1
    return dict(counts.most_common(limit))
'''


def codes(source: str) -> list[str]:
    return [f.code for f in lint(source)]


def test_good_tool_has_no_findings() -> None:
    assert lint(GOOD) == []


@pytest.mark.parametrize(
    ("source", "code"),
    [
        (tool("return 1", imports="import shutil"), "F010"),
        (tool("return 1", imports="import subprocess"), "F010"),
        (tool("return 1", imports="from socket import socket"), "F010"),
        (tool("return 1", imports="import collections.abc"), "F010"),
        (tool("return 1", imports="from string import Formatter"), "F012"),
        (tool("return 1", imports="from functools import wraps"), "F012"),
        (tool("return 1", imports="from typing import get_type_hints"), "F012"),
        (tool("return 1", imports="from json import *"), "F011"),
        (tool("return 1", imports="from . import x"), "F011"),
        (tool("return ().__class__"), "F020"),
        (tool("return [].__class__.__base__.__subclasses__()"), "F020"),
        (tool("x = 1\n_secret = 2\nreturn x"), "F020"),
        (tool("return eval('1')"), "F022"),
        (tool("return exec('x=1')"), "F022"),
        (tool("return getattr(1, 'real')"), "F022"),
        (tool("return vars()"), "F022"),
        (tool("return globals()"), "F022"),
        (tool("return __import__('os')"), "F020"),
        (tool("return type(1)"), "F022"),
        (tool("g = (i for i in [1])\nreturn g.gi_frame"), "F023"),
        (tool("global x\nreturn 1"), "F030"),
        (tool("x = 1\ndef f():\n    nonlocal x\nreturn 1"), "F030"),
        (tool("try:\n    pass\nexcept* ValueError:\n    pass\nreturn 1"), "F031"),
        ("async def run() -> int:\n    '''x'''\n    return 1\n", "F031"),
        (tool("return 1") + "\nclass A(metaclass=B):\n    pass\n", "F024"),
        (tool("return 1") + "\nclass A:\n    def __repr__(self):\n        return 'x'\n", "F020"),
        ("def helper():\n    return 1\n", "F040"),
        (tool("return 1") + tool("return 2"), "F040"),
        ("def run(x) -> int:\n    '''d'''\n    return 1\n", "F043"),
        ("def run(x: set) -> int:\n    '''d'''\n    return 1\n", "F044"),
        ("def run(*args: int) -> int:\n    '''d'''\n    return 1\n", "F041"),
        ("def run(x: int) -> int:\n    return 1\n", "F042"),
        ("def run(x: int = len('a')) -> int:\n    '''d'''\n    return 1\n", "F045"),
        ("SECRETS = [name]\n" + tool("return 1"), "F046"),
        ("SECRETS = ['Bad Name']\n" + tool("return 1"), "F046"),
        ("def run(:\n", "F001"),
        ("x = '" + "a" * 20000 + "'\n" + tool("return 1"), "F004"),
        ("x = " + "(" * 1000 + "1" + ")" * 1000 + "\n" + tool("return 1"), "F001"),
        ("x = " + "[" * 60 + "]" * 60 + "\n" + tool("return 1"), "F003"),
    ],
)
def test_findings(source: str, code: str) -> None:
    assert code in codes(source)


def test_oversized_source() -> None:
    assert codes("#" * (MAX_SOURCE_BYTES + 1)) == ["F002"]


def test_finding_is_actionable() -> None:
    (finding,) = lint(tool("return 1", imports="import socket"))
    assert finding.line == 1
    assert "math" in finding.message and "open()" in finding.message


def test_init_allowed_only_in_classes() -> None:
    ok = tool("return A().v") + "\nclass A:\n    def __init__(self):\n        self.v = 1\n"
    assert lint(ok) == []
    assert "F020" in codes(tool("return 1") + "\ndef __init__():\n    pass\n")


def test_schema_from_signature() -> None:
    schema = tool_schema(GOOD)
    assert schema["required"] == ["path"]
    assert schema["properties"]["path"] == {
        "type": "string",
        "description": "workspace-relative CSV file",
    }
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["tags"]["type"] == ["array", "null"]
    assert schema["properties"]["tags"]["items"] == {"type": "string"}
    assert schema["additionalProperties"] is False


def test_schema_types() -> None:
    src = (
        "from typing import Optional\n"
        "def run(a: float, b: bool, c: dict, d: dict[str, int], e: Optional[str] = None)"
        " -> int:\n    '''d'''\n    return 1\n"
    )
    props = tool_schema(src)["properties"]
    assert props["a"]["type"] == "number"
    assert props["b"]["type"] == "boolean"
    assert props["c"]["type"] == "object"
    assert props["d"]["additionalProperties"] == {"type": "integer"}
    assert props["e"]["type"] == ["string", "null"]


def test_schema_of_bad_tool_raises() -> None:
    with pytest.raises(ToolFormatError) as err:
        tool_schema("def run(x): pass\n")
    assert {f.code for f in err.value.findings} >= {"F042", "F043"}


def test_validate_params() -> None:
    schema = tool_schema(GOOD)
    assert validate_params(schema, {"path": "a.csv", "limit": 3}) == []
    assert validate_params(schema, {"path": 1}) == ["argument 'path' must be string, got int"]
    assert "missing argument 'path'" in validate_params(schema, {})
    assert "unknown argument 'x'" in validate_params(schema, {"path": "a", "x": 1})
    assert validate_params(schema, {"path": "a", "limit": True}) != []
    assert validate_params(schema, [1]) == ["arguments must be a JSON object"]


def test_wire_names_roundtrip() -> None:
    assert to_wire("me.daily_log") == "me__daily_log"
    assert to_wire("daily_log") == "me__daily_log"
    assert from_wire("me__daily_log") == "me.daily_log"
    assert is_wire_name("me__x1") and not is_wire_name("memory_save")
    for bad in ("", "Upper", "1abc", "a-b", "a" * 42, "a__b", "me.", "x.y"):
        with pytest.raises(BadName):
            bare_name(bad)

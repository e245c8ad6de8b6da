"""Realistic tools that must work: an over-strict sandbox is a bug too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from forge.runner import SandboxRunner

pytestmark = pytest.mark.asyncio(loop_scope="module")

CSV_SUM = '''
import csv

def run(path: str) -> dict:
    """Sum every numeric column of a CSV file."""
    totals = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                totals[key] = totals.get(key, 0) + float(value)
    return totals
'''

DATES = '''
from datetime import date, datetime, timedelta

def run(start: str, days: int) -> dict:
    """Dates after a start day."""
    d = datetime.strptime(start, "%Y-%m-%d").date()
    end = d + timedelta(days=days)
    weekdays = [(d + timedelta(days=i)).strftime("%a") for i in range(days)]
    return {"end": end.isoformat(), "weekdays": weekdays, "leap": date(2024, 2, 29).day}
'''

JSON_REGEX = '''
import json
import re

PATTERN = re.compile(r"(?P<user>[a-z]+)@(?P<host>[a-z.]+)")

def run(text: str) -> list:
    """Extract e-mail addresses and write them to a JSON file."""
    found = [m.groupdict() for m in PATTERN.finditer(text)]
    with open("emails.json", "w") as f:
        json.dump(found, f, indent=1)
    with open("emails.json") as f:
        return json.load(f)
'''

CLASSES = '''
from dataclasses import dataclass, field
from collections import defaultdict, Counter

@dataclass
class Item:
    name: str
    price: float
    tags: list = field(default_factory=list)

class Basket:
    def __init__(self):
        self.items = []
        self.total = 0.0

    def add(self, item):
        self.items.append(item)
        self.total += item.price

def run(names: list[str]) -> dict:
    """Fill a basket."""
    b = Basket()
    by_letter = defaultdict(list)
    counts = Counter()
    for i, n in enumerate(names):
        b.add(Item(n, i * 1.5))
        by_letter[n[0]].append(n)
        counts[n[0]] += 1
    return {"total": b.total, "letters": dict(by_letter), "top": counts.most_common(1)}
'''

GENERATORS = '''
import itertools
import functools
import math

def evens(limit):
    n = 0
    while n < limit:
        yield n
        n += 2

def run(limit: int = 10) -> dict:
    """Generators, comprehensions, f-strings, sorted with key, try/except."""
    values = list(evens(limit))
    pairs = list(itertools.combinations(values[:4], 2))
    words = sorted(["pear", "fig", "banana"], key=lambda w: (len(w), w))
    product = functools.reduce(lambda a, b: a * b, [1, 2, 3, 4])
    try:
        1 / 0
    except ZeroDivisionError as exc:
        err = f"caught {type_name(exc)}"
    a, (b, c) = 1, (2, 3)
    label = f"{limit:>4}|{math.pi:.2f}|{words[0]!r}"
    fmt = "{} + {name}".format(1, name="x")
    print("done", len(values))
    return {"values": values, "pairs": len(pairs), "words": words, "product": product,
            "err": err, "abc": [a, b, c], "label": label, "fmt": fmt,
            "squares": {i: i * i for i in range(3)}, "set": sorted({1, 2, 2})}

def type_name(exc):
    return exc.__class__.__name__ if False else "ZeroDivisionError"
'''

MISC = '''
import hashlib
import statistics
import textwrap
import uuid
import random
import string
from decimal import Decimal
from fractions import Fraction
from typing import Optional

def run(text: str, seed: Optional[int] = None) -> dict:
    """Hashes, statistics, text wrapping."""
    rng = random.Random(seed)
    return {
        "sha": hashlib.sha256(text.encode()).hexdigest()[:8],
        "mean": statistics.mean([1, 2, 3, 4]),
        "wrapped": textwrap.wrap(text, 10),
        "uuid_len": len(str(uuid.uuid4())),
        "pick": rng.choice(string.ascii_lowercase) in string.ascii_lowercase,
        "money": str(Decimal("0.10") + Decimal("0.20")),
        "frac": str(Fraction(1, 3) + Fraction(1, 6)),
        "upper": text.upper().split(),
    }
'''


async def _ok(runner: SandboxRunner, src: str, params: dict[str, Any], ws: Path) -> Any:
    res = await runner.run(src, params, ws)
    assert res.ok, (res.error_kind, res.error_message)
    return res.result


async def test_csv_in_workspace(runner: SandboxRunner, workspace: Path) -> None:
    rows = "\n".join(f"{i},{i * 2}" for i in range(100))
    (workspace / "data.csv").write_text("a,b\n" + rows + "\n")
    assert await _ok(runner, CSV_SUM, {"path": "data.csv"}, workspace) == {
        "a": 4950.0,
        "b": 9900.0,
    }


async def test_dates(runner: SandboxRunner, workspace: Path) -> None:
    out = await _ok(runner, DATES, {"start": "2024-02-27", "days": 3}, workspace)
    assert out == {"end": "2024-03-01", "weekdays": ["Tue", "Wed", "Thu"], "leap": 29}


async def test_json_and_regex(runner: SandboxRunner, workspace: Path) -> None:
    out = await _ok(runner, JSON_REGEX, {"text": "mail bob@ex.org or amy@b.co"}, workspace)
    assert out == [{"user": "bob", "host": "ex.org"}, {"user": "amy", "host": "b.co"}]
    assert (workspace / "emails.json").exists()


async def test_small_classes(runner: SandboxRunner, workspace: Path) -> None:
    out = await _ok(runner, CLASSES, {"names": ["apple", "avocado", "bean"]}, workspace)
    assert out == {
        "total": 4.5,
        "letters": {"a": ["apple", "avocado"], "b": ["bean"]},
        "top": [["a", 2]],
    }


async def test_generators_fstrings_sorted(runner: SandboxRunner, workspace: Path) -> None:
    res = await runner.run(
        GENERATORS.replace("exc.__class__.__name__ if False else ", ""), {"limit": 10}, workspace
    )
    assert res.ok, res.error_message
    out = res.result
    assert out["values"] == [0, 2, 4, 6, 8]
    assert out["pairs"] == 6
    assert out["words"] == ["fig", "pear", "banana"]
    assert out["product"] == 24
    assert out["err"] == "caught ZeroDivisionError"
    assert out["abc"] == [1, 2, 3]
    assert out["label"] == "  10|3.14|'fig'"
    assert out["fmt"] == "1 + x"
    assert out["squares"] == {"0": 0, "1": 1, "2": 4}
    assert res.printed == "done 5\n"


async def test_misc_modules(runner: SandboxRunner, workspace: Path) -> None:
    out = await _ok(runner, MISC, {"text": "the quick brown fox jumps", "seed": 7}, workspace)
    assert out["mean"] == 2.5 and out["money"] == "0.30" and out["frac"] == "1/2"
    assert out["uuid_len"] == 36 and out["pick"] is True
    assert out["wrapped"] == ["the quick", "brown fox", "jumps"]


async def test_tool_raising_is_a_runtime_error(runner: SandboxRunner, workspace: Path) -> None:
    src = "def run(x: int) -> int:\n    '''d'''\n    return 10 // x\n"
    res = await runner.run(src, {"x": 0}, workspace)
    assert not res.ok and res.error_kind == "runtime"
    assert "ZeroDivisionError" in res.error_message and "line 3" in res.error_message


async def test_bad_arguments(runner: SandboxRunner, workspace: Path) -> None:
    res = await runner.run(CSV_SUM, {"path": 3}, workspace)
    assert res.error_kind == "runtime" and "must be string" in res.error_message

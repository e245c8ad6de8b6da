"""The secret rules as data: `secret_rules.toml` read and compiled once, on first use.

`RULES` are tokens with a shape of their own, `NAMED` are gitleaks-style
"semi-generic" rules (a value of a given shape assigned to a key that names a
service), `LABELS` says each kind in words. Every rule carries `sources`: the
public rule (gitleaks rule id, trufflehog detector) or provider format it was
learned from. `{start}`/`{end}` in a pattern are the run-boundary assertions
every shape uses, so no match can start inside a run of its own alphabet.

`rule_set()` reads and compiles the file the first time a text is screened,
not at import (a command that never screens never pays for it; `roost serve`
builds it right after it says ready: `bridge.screening.prepare`); `RULES`, `NAMED`
and `LABELS` are its parts, read the same way. Parsing the file with `tomllib` (a
parser written in Python) was most of that step (about 20 ms of CPU of every daemon
and `roost chat`): the parsed document is kept across processes in
`bridge/__pycache__/secret-rules.<cache tag>.marshal` (`parsed`), under the SHA-256 of
the file's text and the interpreter's version, so only the identical text reuses it
(written as `bridge.dataclass_code` writes its own: atomically, as readable as the
package, nothing when byte-code writing is off or the folder is not writable;
`bridge.cli.precompile` writes it at install). The kept document is checked as a
parsed one is (`from_data`): every kind must have a label.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bridge.dataclass_code import cache_path, read_marshal, write_marshal

START = r"(?<![A-Za-z0-9])"  # starts at a run boundary; '_', '-', '=', quotes may precede
END = r"(?![A-Za-z0-9_-])"  # ends where the token alphabet ends


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    keywords: tuple[str, ...]  # lower-case literals, one of which must occur (cheap filter)
    pattern: re.Pattern[str]
    sources: tuple[str, ...]
    entropy: float = 0.0  # Shannon bits per character a match needs (0: any)


@dataclass(frozen=True, slots=True)
class NamedRule:
    kind: str
    names: tuple[str, ...]  # lower-case words looked for inside an assignment's key
    value: re.Pattern[str]  # the whole value must match
    min_entropy: float  # Shannon bits per character the value needs
    sources: tuple[str, ...]


RuleSet = tuple[tuple[Rule, ...], tuple[NamedRule, ...], dict[str, str]]


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.replace("{start}", START).replace("{end}", END))


def load(text: str) -> RuleSet:
    """Parse a rules document; every kind a rule uses must have a label."""
    return from_data(tomllib.loads(text))


def from_data(data: dict[str, Any]) -> RuleSet:
    """A parsed rules document compiled; every kind a rule uses must have a label."""
    labels: dict[str, str] = dict(data["labels"])
    rules = tuple(
        Rule(
            kind=r["kind"],
            keywords=tuple(k.lower() for k in r["keywords"]),
            pattern=_compile(r["pattern"]),
            sources=tuple(r["from"]),
            entropy=float(r.get("entropy", 0.0)),
        )
        for r in data.get("rule", [])
    )
    named = tuple(
        NamedRule(
            kind=r["kind"],
            names=tuple(n.lower() for n in r["names"]),
            value=re.compile(r["value"]),
            min_entropy=float(r.get("min_entropy", 0.0)),
            sources=tuple(r["from"]),
        )
        for r in data.get("named", [])
    )
    missing = ({r.kind for r in rules} | {r.kind for r in named}) - labels.keys()
    if missing:
        raise ValueError(f"secret rules without a label: {sorted(missing)}")
    return rules, named, labels


@cache
def rule_set() -> RuleSet:
    """The shipped rules, compiled on first use and kept."""
    shipped = resources.files("bridge.screening").joinpath("secret_rules.toml")
    return from_data(parsed(shipped.read_text("utf-8")))


def _header(text: str) -> bytes:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"roost-rules 1|{sys.version}|{digest}\n".encode()


def parsed(text: str, folder: Path | None = None) -> dict[str, Any]:
    """`tomllib.loads(text)`, read from the kept file when it was written for this very
    text (and interpreter); else parsed and written there for the next process."""
    path = cache_path(folder, "secret-rules")
    header = _header(text)
    kept = read_marshal(path, header)
    if isinstance(kept, dict):
        return kept
    data = tomllib.loads(text)
    write_marshal(path, header, data)
    return data


_PARTS = ("RULES", "NAMED", "LABELS")


def __getattr__(name: str) -> Any:
    """`RULES`, `NAMED`, `LABELS`: the parts of `rule_set()`, compiled when first asked for."""
    if name in _PARTS:
        return rule_set()[_PARTS.index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

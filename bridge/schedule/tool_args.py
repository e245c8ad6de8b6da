"""A tool job's arguments: read from `/every … me.<tool> key=value …`, checked when the job is made.

A scheduled run has nobody to ask for a missing argument, so the job is
refused at once unless its arguments satisfy the tool's saved schema (the
one `forge.schema.validate_params` checks at every call): each `key=value`
word (quotes group words: `note="two words"`) is read as the parameter's
type (integer, number, `true`/`false`, a JSON list or object, else text).
The words that are not `key=value` are the job's mode (`always`, `on change`).
Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from forge.schema import validate_params

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_TRUE, _FALSE = frozenset({"true", "yes", "on", "1"}), frozenset({"false", "no", "off", "0"})


class ArgsRefused(ValueError):
    """The arguments cannot make this tool's job; the message says what it needs."""


def split_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:  # an unclosed quote
        raise ArgsRefused(f"could not read the arguments ({exc})") from None


def types_of(prop: Mapping[str, Any]) -> list[str]:
    kind = prop.get("type", "string")
    return [kind] if isinstance(kind, str) else [str(k) for k in kind]


def read_value(text: str, prop: Mapping[str, Any]) -> Any:
    """`text` as the first of the parameter's types it reads as (text when none does)."""
    for kind in types_of(prop):
        if kind == "null" and text.lower() in ("null", "none"):
            return None
        if kind == "boolean" and text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        if kind == "integer" and re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if kind == "number" and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            return float(text) if re.search(r"[.eE]", text) else int(text)
        if kind in ("array", "object"):
            try:
                return json.loads(text)
            except ValueError:
                continue
    return text


def signature(schema: Mapping[str, Any]) -> str:
    """`city: string, days?: integer` (`?`: optional), or "no arguments"."""
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = [
        f"{name}{'' if name in required else '?'}: {'|'.join(types_of(prop))}"
        for name, prop in props.items()
    ]
    return ", ".join(parts) or "no arguments"


def example(tool: str, schema: Mapping[str, Any]) -> str:
    required: Sequence[str] = schema.get("required", [])
    return " ".join([tool, *(f"{name}=…" for name in required)])


def read_tool_args(
    words: Sequence[str], schema: Mapping[str, Any], tool: str
) -> tuple[dict[str, Any], list[str]]:
    """(arguments, the other words); ArgsRefused unless the arguments fit the schema."""
    props: Mapping[str, Any] = schema.get("properties", {})
    args: dict[str, Any] = {}
    rest: list[str] = []
    for word in words:
        found = _KEY.match(word)
        if found is None:
            rest.append(word)
            continue
        key, value = found.groups()
        args[key] = read_value(value, props.get(key, {}))
    problems = validate_params(dict(schema), args)
    if problems:
        raise ArgsRefused(
            f"{tool} takes {signature(schema)}; {'; '.join(problems)}. "
            f"A job has nobody to ask later, so give them now: /every 1h {example(tool, schema)}"
        )
    return args, rest

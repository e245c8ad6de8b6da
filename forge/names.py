"""Tool name rules and the reversible mapping between `me.<name>` and wire names.

Saved personal tools are called `me.<name>` (MCP allows the dot). Model APIs
(OpenAI, Anthropic) allow only `[A-Za-z0-9_-]`, so on the wire a tool is
`me__<name>`. A name never contains two underscores in a row, so the mapping is
unambiguous and reversible: `to_wire("me.daily_log") == "me__daily_log"` and
`from_wire("me__daily_log") == "me.daily_log"`.
"""

from __future__ import annotations

import re

NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
PREFIX = "me."
WIRE_PREFIX = "me__"


class BadName(ValueError):
    """A tool name that breaks the naming rules."""


def check_name(name: str) -> str:
    """Return `name` if it is a valid bare tool name, else raise BadName."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise BadName(
            f"bad tool name {name!r}: use 1-41 characters, a lowercase letter first, "
            "then lowercase letters, digits or '_'"
        )
    if "__" in name:
        raise BadName(f"bad tool name {name!r}: two underscores in a row are reserved")
    return name


def bare_name(name: str) -> str:
    """Accept `x` or `me.x` and return the validated bare `x`."""
    if name.startswith(PREFIX):
        name = name[len(PREFIX) :]
    return check_name(name)


def qualified(name: str) -> str:
    """`x` -> `me.x`."""
    return PREFIX + bare_name(name)


def to_wire(name: str) -> str:
    """`me.x` (or `x`) -> `me__x`, safe for `^[a-zA-Z0-9_-]{1,64}$`."""
    return WIRE_PREFIX + bare_name(name)


def from_wire(wire: str) -> str:
    """`me__x` -> `me.x`; raises BadName for anything else."""
    if not wire.startswith(WIRE_PREFIX):
        raise BadName(f"{wire!r} is not a personal tool wire name")
    return PREFIX + check_name(wire[len(WIRE_PREFIX) :])


def is_wire_name(wire: str) -> bool:
    try:
        from_wire(wire)
    except BadName:
        return False
    return True

"""Which audit chains a home's audit directory holds: one per instance.

A home served by one process has one chain, `audit/chain.jsonl`. Instances
that share one home (`[cluster] instance = NAME`) each append to a chain of
their own, `audit/chain-NAME.jsonl`, with its own head (`chain-NAME.head`)
and writer lock (`chain-NAME.lock`): no two processes write one file, so
no instance waits on another's fsync and a dead instance's lock holds
nobody up. Every chain is signed with the home's one HMAC key and names
people with the one `names.key` of the directory, so a person's keyed id is
the same in every chain. Readers (`roost audit verify|tail`, export,
forget, the doctor) take every chain `chain_files` lists.
"""

from __future__ import annotations

import re
from pathlib import Path

DEFAULT = "chain.jsonl"
_PREFIX = "chain-"
_SUFFIX = ".jsonl"
# An instance name is part of a file name: `[cluster] instance`'s rule (letters, digits,
# '.', '_' and '-', first a letter or digit; so never '..' alone nor a '/').
INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def check_instance(name: str) -> str:
    """`name` when it can name an instance's chain; ValueError saying why not."""
    if not INSTANCE_NAME.fullmatch(name):
        raise ValueError(
            f"instance name {name!r} must be 1-63 of A-Z, a-z, 0-9, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    return name


def chain_file(audit_dir: Path, instance: str | None = None) -> Path:
    """The chain an instance appends to (`None`: the home's single chain)."""
    if instance is None:
        return audit_dir / DEFAULT
    return audit_dir / f"{_PREFIX}{check_instance(instance)}{_SUFFIX}"


def instance_of(chain: Path) -> str | None:
    """The instance whose chain `chain` is (None: the single chain)."""
    name = chain.name
    if name == DEFAULT:
        return None
    stem = name.removeprefix(_PREFIX).removesuffix(_SUFFIX)
    return stem if name.startswith(_PREFIX) and name.endswith(_SUFFIX) else None


def chain_files(audit_dir: Path) -> list[Path]:
    """Every chain in `audit_dir`: the single chain first, then the instances' by name."""
    try:
        names = [p.name for p in audit_dir.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    named = sorted(
        n
        for n in names
        if n.startswith(_PREFIX)
        and n.endswith(_SUFFIX)
        and INSTANCE_NAME.fullmatch(n[len(_PREFIX) : -len(_SUFFIX)])
    )
    first = [DEFAULT] if DEFAULT in names else []
    return [audit_dir / n for n in first + named]


def label(chain: Path) -> str:
    """How a command names a chain to the operator."""
    instance = instance_of(chain)
    return "chain.jsonl" if instance is None else f"instance {instance} ({chain.name})"

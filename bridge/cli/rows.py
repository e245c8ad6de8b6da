"""The row types of the `roost` command line and the argparse glue for them.

A `Command` is one subcommand (`roost serve`, `roost vault`, ...): its name,
its one-line help, how it adds its arguments and how it runs. A command with
sub-verbs (`roost vault set|list|rm`) keeps them in a table of `Verb` rows;
`add_verbs` registers the table with argparse and `pick` finds the row a
parsed command line chose, so no command dispatches with an if/elif ladder.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from bridge.types.tenant_dirs import check_tenant_id

if TYPE_CHECKING:  # pydantic is imported once a command runs, not for `roost --help`
    from bridge.core.config import Settings

AddArgs = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace, "Settings"], int]
R = TypeVar("R")


def no_args(parser: argparse.ArgumentParser) -> None:
    """For a command or verb that takes no arguments."""


@dataclass(frozen=True)
class Command:
    """One `roost` subcommand; `quiet` logs only warnings (operator tools)."""

    name: str
    help: str
    add_args: AddArgs
    run: Run
    quiet: bool = True
    resumes: bool = False  # resumes the paused collector itself once started (collector.py)


@dataclass(frozen=True)
class Verb(Generic[R]):
    """One sub-verb of a command; `run` has the shape its command calls it with."""

    name: str
    help: str
    add_args: AddArgs
    run: R


def add_verbs(parser: argparse.ArgumentParser, dest: str, verbs: Sequence[Verb[R]]) -> None:
    """One required action argument, one sub-parser per verb (its help as description).

    The metavar lists the verbs, so usage lines and "required" errors name them.
    """
    names = "{" + ",".join(verb.name for verb in verbs) + "}"
    sub = parser.add_subparsers(dest=dest, metavar=names, required=True)
    for verb in verbs:
        verb.add_args(sub.add_parser(verb.name, help=verb.help, description=verb.help))


def pick(verbs: Sequence[Verb[R]], name: str) -> R:
    """The `run` of the verb argparse accepted (`add_verbs` lets no other name through)."""
    return {verb.name: verb.run for verb in verbs}[name]


def tenant_arg(value: str) -> str:
    """argparse type for a tenant id."""
    try:
        return check_tenant_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

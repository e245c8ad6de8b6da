"""The `roost` command line makes only the chosen subcommand's parser.

Making an argparse parser costs its message look-ups (gettext, ~1 ms each on a
forked start, ~8-10 ms for all 25): a command makes its own parser, and
`roost --help` lists every command from its name and help without making any.
What the user sees (help, usage, errors, parsed arguments) is asserted as well.
"""

from __future__ import annotations

import argparse

import pytest

from bridge.cli.main import LazySubParsers, build_parser
from bridge.cli.table import COMMANDS


def subcommands(parser: argparse.ArgumentParser) -> LazySubParsers:
    [sub] = [a for a in parser._actions if isinstance(a, LazySubParsers)]
    return sub


def made(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommands whose parser exists."""
    return [name for name, p in subcommands(parser)._name_parser_map.items() if p is not None]


def test_a_command_makes_its_own_parser_only() -> None:
    parser = build_parser()
    args = parser.parse_args(["send", "--chat", "c1", "hello"])
    assert (args.command, args.chat, args.text) == ("send", "c1", ["hello"])
    assert made(parser) == ["send"]


def test_roost_help_lists_every_command_and_makes_no_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for row in COMMANDS:
        assert f"    {row.name} " in out and row.help in out
    assert made(parser) == []


def test_an_unknown_command_names_every_choice(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["sned", "hello"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'sned'" in err
    for row in COMMANDS:
        assert repr(row.name) in err
    assert made(parser) == []


def test_a_subcommand_parser_is_made_once_with_its_prog() -> None:
    parser = build_parser()
    sub = subcommands(parser)
    first = sub.parser("doctor")
    assert first.prog == "roost doctor" and first.description == next(
        row.help for row in COMMANDS if row.name == "doctor"
    )
    assert sub.parser("doctor") is first
    assert parser.parse_args(["doctor"]).command == "doctor"
    assert made(parser) == ["doctor"]

"""The `roost` command line: every row of the table answers `--help`, verbs are named.

`roost --help` lists every subcommand with its help; each subcommand's
`--help` prints its description, and a command with sub-verbs lists them,
answers `--help` for each, and names them all when none is given (exit 2).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from bridge.cli import audit, loadout, style, tools
from bridge.cli.main import build_parser
from bridge.cli.rows import Command
from bridge.cli.table import COMMANDS
from tests.waits import HANG_S

VERB_TABLES = {"audit": audit.VERBS, "vault": loadout.VERBS, "style": style.VERBS}
VERB_TABLES["tools"] = tools.VERBS
VERBS = [(name, verb.name, verb.help) for name, table in VERB_TABLES.items() for verb in table]


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


def test_roost_help_lists_every_row() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "--help"],
        capture_output=True,
        text=True,
        timeout=HANG_S,
    )
    assert proc.returncode == 0
    listed = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("    ")}
    assert [row.name for row in COMMANDS] == list(listed)
    for row in COMMANDS:
        assert row.help in listed[row.name]


@pytest.mark.parametrize("row", COMMANDS, ids=lambda r: r.name)
def test_each_subcommand_help(row: Command, capsys: pytest.CaptureFixture[str]) -> None:
    out = help_of([row.name], capsys)
    assert out.startswith(f"usage: roost {row.name}")
    assert row.help in out
    for verb in VERB_TABLES.get(row.name, ()):
        assert f"{verb.name} " in out and verb.help in out


@pytest.mark.parametrize(("name", "verb", "text"), VERBS, ids=[f"{n}-{v}" for n, v, _ in VERBS])
def test_each_verb_help(
    name: str, verb: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = help_of([name, verb], capsys)
    assert out.startswith(f"usage: roost {name} {verb}") and text in out


@pytest.mark.parametrize("name", sorted(VERB_TABLES))
def test_a_missing_verb_names_the_choices(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args([name])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "required" in err
    for verb in VERB_TABLES[name]:
        assert verb.name in err


def test_an_unknown_verb_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["vault", "show", "alice"])
    assert done.value.code == 2
    assert "invalid choice: 'show'" in capsys.readouterr().err

"""The Landlock ruleset's arguments are made once (`ruleset_args`, in the helper) and
used by every sandbox child (forge.confine.landlock): a child fills in its own
workspace rule in its own copy, so the rulesets it builds hold only its workspace,
and the prepared arguments in the process that made them never change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forge.confine.landlock import (
    RulesetArgs,
    create_ruleset,
    landlock_abi,
    landlock_restrict,
    open_roots,
    read_only_roots,
    ruleset_args,
)

ABI = landlock_abi()
pytestmark = pytest.mark.skipif(not ABI, reason="no Landlock on this kernel")


def _confined_child(args_ws: Path, other: Path, args: RulesetArgs) -> int:
    """Fork; the child confines itself with the prepared `args` to `args_ws`, writes
    there and tries `other`; its exit status says what happened (0: as wanted)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 9
        try:
            ws = os.open(args_ws, os.O_RDONLY | os.O_DIRECTORY)
            landlock_restrict(ABI, create_ruleset(args), ws, args)
            (args_ws / "mine.txt").write_text("ok")
            try:
                (other / "stolen.txt").write_text("x")
                code = 1
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_prepared_arguments_confine_each_child_to_its_own_workspace(tmp_path: Path) -> None:
    fds = open_roots(read_only_roots())
    try:
        args = ruleset_args(ABI, fds)
        a, b = tmp_path / "a", tmp_path / "b"
        a.mkdir()
        b.mkdir()
        for own, other in ((a, b), (b, a), (a, b)):
            assert _confined_child(own, other, args) == 0
            assert (own / "mine.txt").read_text() == "ok"
            assert not (other / "stolen.txt").exists()
        assert args.workspace.parent_fd == -1  # each child filled in its own copy
        assert len(args.rules) == len(fds)
    finally:
        for fd in fds:
            os.close(fd)

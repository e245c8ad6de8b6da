"""The `roost` entry point: parse the command line, load the settings, run one row.

The subcommands are the rows of `bridge.cli.table.COMMANDS` (name, help,
how to add its arguments, how to run it); `roost` alone runs `serve`. Configuration
errors exit with status 78 (EX_CONFIG) and a message naming the key, so
systemd's RestartPreventExitStatus=78 stops a restart loop; so does a home this
user cannot read (checked before any command that uses it but `doctor`, which
reports it, and `audit`, which exits 2); and a home of another user (root running
`roost pair` on the service's home) for a command that writes into it (exit 78, naming
the owner and `sudo -u OWNER env ROOST_HOME=... roost ...`; `READS_ONLY` commands run,
and root runs the read-only ones of `bridge.cli.as_owner.AS_OWNER` as the home's
owner). What a command does not catch itself is one line too, never a traceback: a
full disk (exit 1), a
database that cannot be read (exit 1, pointing to `roost doctor` and a backup), a file
this user may not touch (exit 78). Every entry point
runs with umask 0077 (`PRIVATE_UMASK`): whatever roost or its sandbox creates
(database and its WAL, audit files, memory, tools) is readable by its owner only.

A `roost` process looks up no pydantic plugin (`skip_pydantic_plugins`): roost uses
none, and pydantic's search of every installed distribution's entry points costs
each process about 20 M instructions (4-5 ms). A plugin installed on purpose (e.g.
an observability one) is loaded again by setting `PYDANTIC_DISABLE_PLUGINS` to
anything else, the empty string included: a value in the environment is kept.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.cli import collector
from bridge.cli.as_owner import become_owner, denied_as, owner_name, reads_only
from bridge.cli.rows import AddArgs, Command
from bridge.cli.table import COMMANDS, command

if TYPE_CHECKING:  # pydantic is imported once a command runs, not for `roost --help`
    from bridge.core.config import Settings

PRIVATE_UMASK = 0o077
NO_PYDANTIC_PLUGINS = ("PYDANTIC_DISABLE_PLUGINS", "__all__")  # read by pydantic.plugin._loader
EX_CONFIG = 78  # bridge.core.config.EX_CONFIG, without importing pydantic for `--help`


class CommandListFormatter(argparse.HelpFormatter):
    """One line per command in `roost --help`, names up to `install-units` long.

    argparse measures subcommand names without their extra indent, so a long
    name would push its help to the next line; count the indent, allow a wide line.
    """

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=110)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS and action.choices:
            longest = max(len(str(name)) for name in action.choices)
            self._action_max_length = max(
                self._action_max_length, longest + self._current_indent + 2 * self._indent_increment
            )


class LazySubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """Makes a subcommand's parser, and adds its arguments, when argparse picks that
    subcommand.

    Adding them means importing the command's module (`bridge.cli.table`), so
    `roost --help` imports no command module and `roost send` only its own. Making a
    parser costs argparse's message look-ups (gettext, ~1 ms a parser): a command makes
    its own only, not all of them (`add_lazy`); `roost --help` lists every command from
    its name and help alone.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, tuple[dict[str, Any], AddArgs]] = {}

    def add_lazy(self, name: str, help: str, add: AddArgs, **kwargs: Any) -> None:
        """A subcommand listed in the help and accepted as a choice; its parser (`kwargs`:
        as `add_parser`'s) is made when argparse picks it (`parser`)."""
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        self._name_parser_map[name] = None  # a choice now, a parser once picked
        self.pending[name] = (kwargs | {"prog": f"{self._prog_prefix} {name}"}, add)

    def parser(self, name: str) -> argparse.ArgumentParser:
        """The parser of subcommand `name`, made (with its arguments) on first use."""
        waiting = self.pending.pop(name, None)
        if waiting is not None:
            kwargs, add = waiting
            made = self._parser_class(**kwargs)
            self._name_parser_map[name] = made
            add(made)
        found: argparse.ArgumentParser = self._name_parser_map[name]
        return found

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if values[0] in self._name_parser_map:
            self.parser(values[0])
        super().__call__(parser, namespace, values, option_string)


class VersionAction(argparse.Action):
    """`roost --version`: `roost <version>` from the installed package's metadata (the
    `version` of pyproject.toml), looked up only when asked (`--help` stays lean)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print roost's version and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(f"roost {version()}")
        parser.exit(0)


def version() -> str:
    """The installed distribution's version; pyproject.toml's when run from a checkout
    that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("roost")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text("utf-8"))["project"]["version"])
        except (OSError, ValueError, KeyError):
            return "(unknown version)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="roost",
        description="roost: a chat-bridge daemon with a persistent per-person loadout. "
        "`roost` without a command runs `roost serve`; `roost --version` prints its version.",
        formatter_class=CommandListFormatter,
    )
    parser.add_argument("-V", "--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", action=LazySubParsers)
    assert isinstance(sub, LazySubParsers)
    for row in COMMANDS:
        sub.add_lazy(row.name, row.help, row.add_args, description=row.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `argv` (None: this process's own command line, the collector paused while
    it starts: bridge/cli/collector.py)."""
    own = argv is None
    if own:
        collector.pause()
        skip_pydantic_plugins(os.environ)
    try:
        return _main(argv, own)
    except BrokenPipeError:  # `roost install-units | head`: the reader left, nothing to say
        if not own:
            raise
        _stdout_to_devnull()
        return EX_PIPE
    except KeyboardInterrupt:  # Ctrl-C while the command starts: no traceback
        if not own:
            raise
        return EX_INTERRUPTED
    finally:
        if own:
            collector.resume()


EX_PIPE = 141  # as a shell reports a process that SIGPIPE ended (128 + 13)
EX_INTERRUPTED = 130  # as a shell reports a process that Ctrl-C (SIGINT) ended (128 + 2)


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null: the interpreter's last flush at exit then writes nowhere
    instead of printing a second BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def skip_pydantic_plugins(environ: MutableMapping[str, str]) -> None:
    """Tell pydantic, before its first model, that this process loads no plugin, unless
    the environment already says something about plugins (the operator's word wins).
    Only `roost`'s own process (and its children) see it: pydantic reads it at each
    model it builds, so it stays set."""
    name, value = NO_PYDANTIC_PLUGINS
    environ.setdefault(name, value)


def unrecognized(name: str | None, extra: list[str]) -> str:
    """argparse's "unrecognized arguments" line; for `send` and a word of the message
    that looks like an option (`/memory show coffee --history`), how to send it."""
    said = f"unrecognized arguments: {' '.join(extra)}"
    if name == "send" and extra[0].startswith("-"):
        said += (
            f"; to send {extra[0]} as part of the message, put the message in quotes or "
            "after -- (roost send -- /memory show coffee --history)"
        )
    return said


def _main(argv: Sequence[str] | None, own: bool) -> int:
    os.umask(PRIVATE_UMASK)  # before anything is created, in every subcommand
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(unrecognized(args.command, extra))  # exit 2, as parse_args
    row = command(args.command or "serve")
    # imported once a command was chosen: `roost --help` stays lean
    from bridge.app.logging_setup import Redactor, secret_values, setup_logging
    from bridge.audit import ChainCorrupt
    from bridge.channels import ChannelStartError
    from bridge.core.config import ConfigError, load_settings
    from bridge.types.backend import BackendError

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"roost: {Redactor().redact(str(exc))}", file=sys.stderr)
        return EX_CONFIG
    level = "WARNING" if row.quiet else settings.log_level
    redactor = setup_logging(level, secret_values(settings), settings.log_format)

    def fail(message: str, status: int) -> int:
        print(f"roost: {redactor.redact(message)}", file=sys.stderr)
        return status

    if own and not row.resumes:
        collector.resume()  # its module and the settings are loaded: the command's own work
    if row.name not in OWN_HOME_CHECK:
        unusable = home_problem(settings.home)
        if unusable is not None:
            return fail(unusable, EX_CONFIG)
    if reads_only(row.name, args):  # root on the service's home: as its owner (as_owner.py)
        was = os.geteuid()
        hidden = become_owner(settings.home)
        if hidden is not None:
            return fail(hidden, EX_CONFIG)
        if os.geteuid() != was:  # what it may not read is said so (`denied_as`)
            args.as_owner = owner_name(os.geteuid())
    if row.name not in READS_ONLY:
        foreign = owner_problem(settings.home, os.geteuid(), sys.argv[1:] if own else argv)
        if foreign is not None:
            return fail(foreign, EX_CONFIG)
    try:
        return _run_unwrapped(row, args, settings)
    except KeyboardInterrupt:
        return EX_INTERRUPTED
    except ConfigError as exc:
        return fail(str(exc), EX_CONFIG)
    except BackendError as exc:
        if exc.kind != "config":
            raise
        # a backend refused what it was given (a rule check_llm does not know yet)
        return fail(f"invalid configuration: {exc.user_message}", EX_CONFIG)
    except ChannelStartError as exc:
        return fail(str(exc), 1)
    except ChainCorrupt as exc:
        return fail(
            f"the audit chain is damaged ({exc}). Run `roost audit verify` for details; "
            "move audit/ aside to start a new chain.",
            EX_CONFIG,
        )
    except Exception as exc:
        return _last_resort(exc, settings, fail, denied_as(args, settings.home))


# Commands that check the home themselves or use none: `doctor` reports an unusable home
# as one of its checks, `audit` exits 2 on an unreadable chain (its documented status);
# `install-units`, `grade` and `recall-eval` read no home.
OWN_HOME_CHECK = frozenset({"doctor", "audit", "install-units", "grade", "recall-eval"})
# Commands that write nothing into the home (`backup` writes DEST, outside it): they may
# run as another user than the home's owner (root); every other one writes (a database,
# tenant folders, the audit chain, exports/) and is refused (`owner_problem`).
READS_ONLY = frozenset(
    {"doctor", "audit", "backup", "install-units", "grade", "recall-eval", "web-token"}
)
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
FULL = "database or disk is full"


def home_problem(home: Path) -> str | None:
    """Why `home` cannot be used (a path through a file, a folder this user may not
    read), or None; a home that does not exist yet is made by the commands that write."""
    try:
        if not stat.S_ISDIR(os.stat(home).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(home))
        os.listdir(home)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return (
            f"invalid configuration: home: cannot use {home} ({exc.strerror}); "
            "set ROOST_HOME to a directory this user can read and write"
        )
    return None


def owner_problem(home: Path, euid: int, argv: Sequence[str] | None) -> str | None:
    """Why a command that writes into `home` must not run as `euid`: the home belongs to
    another user (root running `roost pair` on a service's home left files the service
    cannot read, and it stayed down), or None (the same user, or no home yet)."""
    try:
        owner = os.stat(home).st_uid
    except OSError:
        return None  # not made yet (the command makes it), or `home_problem`'s case
    if owner == euid:
        return None
    import pwd
    import shlex

    def name(uid: int) -> str:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"#{uid}"  # as sudo -u takes a uid

    user = name(owner)
    # sudo's env_reset drops ROOST_HOME and ROOST_CONFIG: the advice names them (atk39)
    where = [f"ROOST_HOME={home}"]
    if os.environ.get("ROOST_CONFIG"):
        where.append(f"ROOST_CONFIG={os.environ['ROOST_CONFIG']}")
    again = shlex.join(["sudo", "-u", user, "env", *where, "roost", *(argv or [])])
    return (
        f"{home} belongs to the user {user.lstrip('#')}, not to {name(euid).lstrip('#')}: "
        "files this command wrote there would be unreadable to roost; run it as the "
        f"home's owner: `{again}`"
    )


def _run_unwrapped(row: Command, args: argparse.Namespace, settings: Settings) -> int:
    """Run the command; a task group's one failure is raised as itself, so the handlers
    of `_main` see it."""
    try:
        return row.run(args, settings)
    except BaseExceptionGroup as group:
        only = _single(group)
        if only is None:
            raise
        raise only from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception a group holds (through nested groups), or None."""
    leaves: list[BaseException] = []
    todo: list[BaseException] = [group]
    while todo:
        exc = todo.pop()
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)
        else:
            leaves.append(exc)
    return leaves[0] if len(leaves) == 1 else None


def _last_resort(
    exc: Exception, settings: Settings, fail: Callable[[str, int], int], as_owner: str = ""
) -> int:
    """One line for what the commands do not catch themselves: a full disk, a database
    that cannot be read, a file this user may not touch (`as_owner`: why, when root
    became the home's owner: `as_owner.denied_as`); anything else is re-raised."""
    import sqlite3

    from bridge.storage.errors import DatabaseUnreachable, StorageError

    if isinstance(exc, OSError) and exc.errno in NO_SPACE:
        where = f"cannot write {exc.filename}" if exc.filename else "cannot write"
        return fail(f"disk full: {where} ({exc.strerror}); free some space, run it again", 1)
    if isinstance(exc, (StorageError, sqlite3.Error)) and FULL in str(exc):
        return fail(f"disk full: {_line(exc)}; free some space, run it again", 1)
    if isinstance(exc, DatabaseUnreachable):
        return fail(_line(exc), EX_CONFIG)
    if isinstance(exc, (StorageError, sqlite3.DatabaseError)):
        if settings.database.url is not None:  # PostgreSQL: the server says what is wrong
            return fail(
                f"the database ([database] url) failed: {_line(exc)}. Run `roost doctor`", 1
            )
        return fail(
            f"the database {settings.home / 'roost.db'} cannot be used ({_line(exc)}). Run "
            f"`roost doctor` to check it; if it is damaged, stop roost, move the home "
            f"{settings.home} aside and restore a backup into it (`roost restore BACKUP`: "
            "it restores only into a new or empty home)",
            1,
        )
    if isinstance(exc, PermissionError):
        what = exc.filename or settings.home
        if as_owner and exc.filename:  # already its owner: a file that user may not read
            return fail(f"cannot use {what} ({exc.strerror}){as_owner}", EX_CONFIG)
        return fail(
            f"cannot use {what} ({exc.strerror}); run roost as the user that owns {settings.home}",
            EX_CONFIG,
        )
    raise exc


def _line(exc: BaseException) -> str:
    """An exception's message on one line, not too long."""
    return " ".join(str(exc).split())[:300] or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())

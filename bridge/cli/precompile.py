"""Byte code and start-up caches written ahead, for an installation its service cannot write.

Every `roost` process and sandbox helper imports roost's own modules from the
source tree (`pip install -e`). Python keeps their byte code in `__pycache__`
beside them, and `bridge.dataclass_code`, `bridge.regex_code`,
`bridge.forward_refs`, `bridge.screening.shape_cache` and `bridge.screening.rule_data`
keep what roost's classes, patterns and annotations' forward references compile to,
the shapes of the screens' patterns and the screens' parsed rules file, in
`bridge/__pycache__`; each is
written by the first process that needs it. The systemd unit runs roost as
its own user with `ProtectSystem=strict`, so no roost process can write in
`/opt/roost`: unless these were written ahead, every start compiled roost
again (`roost send /help` about 2.2 times the CPU, `roost serve` about 2.1 times
to its ready line: bench/startup_readonly.py, docs/scaling.md).

`python -m bridge.cli.precompile` (run by `make`, as whoever installs roost)
writes them all: the byte code of every module of `bridge` and `forge`
(`compileall`), then imports each module and compiles what a start compiles
beyond its imports (`constants`: the screens' tables, the audit's identity
patterns, the command line's), so the caches hold what the daemon's start,
its first message and a command compile; they are written at exit. Files it finds
narrower than the source tree's (a `__pycache__` a process under umask 0077
made) are made as readable as the package folder they are in, never more
(`share`). It prints one line of what it did, and exits 1 (naming the
modules) when a module does not compile or does not import for another reason
than an optional extra's missing library.
"""

from __future__ import annotations

import compileall
import contextlib
import importlib
import io
import os
import pkgutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType


def packages() -> list[ModuleType]:
    import bridge
    import forge

    return [bridge, forge]


def modules(package: ModuleType) -> Iterator[str]:
    """The names of every module of `package`, its `__main__` left out (it runs a program)."""
    prefix = package.__name__ + "."
    for info in pkgutil.walk_packages(package.__path__, prefix, onerror=lambda _name: None):
        if not info.name.endswith(".__main__"):
            yield info.name


def import_all(names: list[str]) -> tuple[int, list[str], list[str]]:
    """Import each of `names`: how many imported, the optional ones skipped (a library not
    installed) and the failures (`name: error`)."""
    done, skipped, failed = 0, [], []
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").split(".")[0]
            if missing in ("bridge", "forge", ""):
                failed.append(f"{name}: {exc}")
            else:
                skipped.append(f"{name} (no {missing})")
        except Exception as exc:  # a module that does not import is what this step reports
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
        else:
            done += 1
    return done, skipped, failed


def constants() -> None:
    """Compile what a start compiles beyond its imports, each kept by `bridge.regex_code`
    (a constant site): the screens' tables (`prepare.steps`, a daemon's first message),
    the audit's identity patterns of every platform (`schemas_for`, every chain opened)
    and argparse's own patterns (every command: its parser, its arguments, its help)."""
    from bridge.app.channels_up import PLATFORMS
    from bridge.audit.schema import schemas_for
    from bridge.cli.main import build_parser
    from bridge.cli.table import COMMANDS
    from bridge.screening.prepare import steps

    for _ in steps():
        pass
    schemas_for(PLATFORMS)
    parser = build_parser()
    parser.format_help()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for row in COMMANDS:  # each command's arguments are added when it is parsed
            with contextlib.suppress(SystemExit):
                parser.parse_known_args([row.name, "x"])


def share(folder: Path) -> int:
    """Make each `__pycache__` under `folder` and the files in it as readable as the package
    folder it is in (its mode without write for group and others, files without execute),
    where they are narrower; the number of entries changed."""
    changed = 0
    for cache in folder.rglob("__pycache__"):
        if not cache.is_dir():
            continue
        base = stat.S_IMODE(cache.parent.stat().st_mode) & 0o755
        changed += _widen(cache, base)
        for entry in cache.iterdir():
            if entry.is_file() and not entry.is_symlink():
                changed += _widen(entry, base & 0o644)
    return changed


def _widen(path: Path, wanted: int) -> int:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode | wanted == mode:
        return 0
    os.chmod(path, mode | wanted)
    return 1


def main() -> int:
    sys.dont_write_bytecode = False  # written on purpose (PYTHONDONTWRITEBYTECODE aside)
    found = packages()
    roots = [Path(package.__file__ or "").parent for package in found]
    compiled = all(compileall.compile_dir(str(root), quiet=1) for root in roots)
    names = [name for package in found for name in modules(package)]
    done, skipped, failed = import_all(names)
    constants()
    widened = sum(share(root) for root in roots)
    where = ", ".join(str(root) for root in roots)
    print(
        f"roost: byte code and start-up caches written for {done} modules in {where}"
        + (f"; {widened} files made readable like the source" if widened else "")
        + (f"; skipped (optional extras): {', '.join(skipped)}" if skipped else "")
    )
    if failed or not compiled:
        for line in failed:
            print(f"roost: does not import: {line}", file=sys.stderr)
        if not compiled:
            print("roost: some modules did not compile (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

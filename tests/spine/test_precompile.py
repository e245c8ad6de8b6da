"""`make`'s precompile step: a tree its service cannot write still starts from byte code and caches.

The systemd unit runs roost as a user that cannot write `/opt/roost`. Here a copy
of `bridge/` and `forge/` (no `__pycache__`) is precompiled under umask 0077, as
a careful installer might run `make`; then what a daemon's start and first
message import and compile runs in that copy, and nothing under any
`__pycache__` may change: every module's byte code, every dataclass method and
every screen pattern was there already, readable by other users.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli.precompile import share
from tests.fresh import REPO, env_without
from tests.waits import HANG_S

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 11), reason="roost's start-up caches apply to Python 3.11 only"
)

# what `roost serve` imports up to its ready line and builds for a first message, and
# the module a helper imports (the web channel and the model client load lazily)
DAEMON = """
import bridge.cli.main, bridge.app.serve, bridge.app.web_extras, bridge.llm.openai, forge.worker
from bridge.screening.prepare import steps
for _ in steps():
    pass
"""


def _copy(to: Path) -> Path:
    """The packages' sources, as an installed tree holds them: readable by others."""
    for package in ("bridge", "forge"):
        shutil.copytree(
            REPO / package, to / package, ignore=shutil.ignore_patterns("__pycache__", "*.tmp")
        )
    for path in (to, *to.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return to


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env_without("PYTHONDONTWRITEBYTECODE"),  # every write it would make, it makes
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_S,
        preexec_fn=lambda: os.umask(0o077),  # as roost's processes run
        check=False,
    )


def _patterns(tree: Path) -> set[object]:
    """The patterns in the tree's regex cache (to name what a process added)."""
    from bridge.dataclass_code import read_marshal
    from bridge.regex_code import _header

    found = read_marshal(tree / "bridge" / "__pycache__" / _REGEX_FILE, _header())
    return {key[1] for key in found} if isinstance(found, dict) else set()


_REGEX_FILE = f"regex-code.{sys.implementation.cache_tag}.marshal"


def _caches(tree: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(tree)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in tree.rglob("__pycache__/*")
    }


def test_a_precompiled_tree_gives_a_daemon_everything_it_would_write(
    tmp_path: Path, home: Path
) -> None:
    tmp_path.chmod(0o755)
    tree = _copy(tmp_path / "tree")
    done = _run(["-m", "bridge.cli.precompile"], tree)
    assert done.returncode == 0, done.stderr
    assert "byte code and start-up caches written for" in done.stdout

    sources = [p for p in tree.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 400
    missing = [p for p in sources if not Path(importlib.util.cache_from_source(str(p))).is_file()]
    assert missing == []
    caches = {p.name.split(".")[0] for p in (tree / "bridge" / "__pycache__").glob("*.marshal")}
    assert caches == {"dataclass-code", "forward-refs", "regex-code", "regex-shape", "secret-rules"}
    written = [p for p in tree.rglob("*") if "__pycache__" in p.parts]
    assert len(written) > len(sources)  # the folders, the byte code and the caches
    for entry in written:  # readable by the service's user, though written under 0077
        mode = stat.S_IMODE(entry.stat().st_mode)
        assert mode == (0o755 if entry.is_dir() else 0o644), (entry, oct(mode))

    before, patterns = _caches(tree), _patterns(tree)
    started = _run(["-c", DAEMON], tree)
    assert started.returncode == 0, started.stderr
    command = _run(["-m", "bridge.cli.main", "send", "/help"], tree)  # a command, in `home`
    assert command.returncode == 0, command.stderr
    assert "/help" in command.stdout and home.is_dir()
    # nothing was compiled that the installer had not written
    assert _caches(tree) == before, sorted(map(str, _patterns(tree) - patterns))


def test_share_widens_a_private_cache_to_its_package_and_no_further(tmp_path: Path) -> None:
    for name, package_mode in (("open", 0o755), ("private", 0o700)):
        package = tmp_path / name
        cache = package / "__pycache__"
        cache.mkdir(parents=True)
        (cache / "m.cpython-311.pyc").write_bytes(b"x")
        (cache / "m.cpython-311.pyc").chmod(0o600)
        cache.chmod(0o700)
        package.chmod(package_mode)
    assert share(tmp_path) == 2  # the open package's folder and file

    def mode(*parts: str) -> int:
        return stat.S_IMODE(tmp_path.joinpath(*parts).stat().st_mode)

    assert mode("open", "__pycache__") == 0o755
    assert mode("open", "__pycache__", "m.cpython-311.pyc") == 0o644
    assert mode("private", "__pycache__") == 0o700
    assert mode("private", "__pycache__", "m.cpython-311.pyc") == 0o600
    assert share(tmp_path) == 0  # already as wide as its package

"""A throwaway PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temp dir.

Debian's `postgresql` package puts the binaries under
/usr/lib/postgresql/<major>/bin (`make test` installs it as root when it is
missing). PostgreSQL refuses to run as root, so as root the server runs as
the `postgres` system user over a directory it owns. It listens on
127.0.0.1 at a free port with `trust` authentication (loopback, a test
server), fsync off (nothing here needs to survive a power cut), and
`pg_ctl start -w` returns once it accepts connections. Its data folder is a copy
of one initdb made once for the machine (`_template`).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class NoPostgres(Exception):
    """PostgreSQL is not installed here (the message says what is missing)."""


def bindir() -> Path:
    """The newest installed server's bin directory."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise NoPostgres(
        "no initdb under /usr/lib/postgresql/*/bin or on PATH (apt-get install postgresql)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    bin: Path
    root: Path
    port: int
    user: str | None  # the system user the server runs as (None: this process's user)

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args),
            user=self.user,
            group=self.user,
            capture_output=True,
            text=True,
            check=check,
            cwd=self.root,
            timeout=300,
        )

    def start(self) -> None:
        """Start (again); `-w`: return once the server accepts connections."""
        for attempt in range(5):
            done = self._run(
                str(self.bin / "pg_ctl"),
                "start",
                "-w",
                "-t",
                "180",
                "-D",
                str(self.data),
                "-l",
                str(self.root / "log"),
                "-o",
                f"-p {self.port} -k {self.root}",
                check=False,
            )
            if done.returncode == 0:
                return
            if "Address already in use" not in (self.root / "log").read_text() or attempt == 4:
                raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{self.log_tail()}")
            self.port = _free_port()  # someone took the port meanwhile

    def stop(self, mode: str = "fast") -> None:
        self._run(
            str(self.bin / "pg_ctl"),
            "stop",
            "-w",
            "-t",
            "180",
            "-m",
            mode,
            "-D",
            str(self.data),
            check=False,
        )

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.root / "log").read_text()[-2000:]
        return ""

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


INITDB = ("-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
CONF = (
    "\nlisten_addresses = '127.0.0.1'\nfsync = off\nsynchronous_commit = off\n"
    "full_page_writes = off\nmax_connections = 200\nshared_buffers = 64MB\n"
)


# where `_template` keeps its data folder (tests/storage/test_pg_template.py points it
# elsewhere)
TEMPLATES = Path("/tmp")


def _initdb(server: PgServer, data: Path) -> None:
    server._run(str(server.bin / "initdb"), "-D", str(data), *INITDB)
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(CONF)


def _template(server: PgServer) -> Path | None:
    """A data folder initdb made once for this PostgreSQL build, user and settings, for
    each server to copy: `cp -a` of its 39 MB is about 0.1 s of CPU against initdb's
    0.6-1 s, and `make test` starts about 13 servers. It lives in /tmp (a cache, like
    .venv-synapse); the first process to need it makes it under a lock, and it counts
    once `ready` exists. None (initdb each time) when the folder is not ours."""
    initdb = server.bin / "initdb"
    stamp = f"{initdb}:{initdb.stat().st_mtime_ns}:{server.user}:{INITDB}:{CONF}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    home = TEMPLATES / f"roost-pg-template-{os.geteuid()}-{key}"
    owner = pwd.getpwnam(server.user).pw_uid if server.user is not None else os.geteuid()
    with contextlib.suppress(FileExistsError):
        home.mkdir(mode=0o700)
        if server.user is not None:
            shutil.chown(home, server.user, server.user)
    found = home.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != owner or found.st_mode & 0o022:
        return None  # someone else's, or writable by others: not trusted
    data = home / "data"
    with (home / "lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # let go when closed
        if not (home / "ready").exists():
            shutil.rmtree(data, ignore_errors=True)  # a make that was cut short
            _initdb(server, data)
            (home / "ready").touch()
    return data


def _started_from_template(server: PgServer) -> bool:
    """True once the server runs on a copy of `_template`; False when there is no template
    or the copy would not start (a template /tmp's cleaner thinned, say: made again next
    time), with `server.data` left absent for initdb."""
    template = _template(server)
    if template is None:
        return False
    server._run("cp", "-a", str(template), str(server.data))  # as the server's user: its own
    try:
        server.start()
    except RuntimeError:
        (template.parent / "ready").unlink(missing_ok=True)
        shutil.rmtree(server.data)
        return False
    return True


def start_server() -> PgServer:
    """A new server in a new temp dir (its data a copy of `_template`, or initdb's own
    when there is none), started; raise NoPostgres when there is none."""
    path = bindir()
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise NoPostgres(
                "running as root and there is no `postgres` user to run the server"
            ) from exc
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="roost-pg-", dir="/tmp"))
    if user is not None:
        shutil.chown(root, user, user)
    server = PgServer(path, root, _free_port(), user)
    try:
        if not _started_from_template(server):
            _initdb(server, server.data)
            server.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server

"""A throwaway PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temp dir.

Debian's `postgresql` package puts the binaries under
/usr/lib/postgresql/<major>/bin (`make test` installs it as root when it is
missing). PostgreSQL refuses to run as root, so as root the server runs as
the `postgres` system user over a directory it owns. It listens on
127.0.0.1 at a free port with `trust` authentication (loopback, a test
server), fsync off (nothing here needs to survive a power cut), and
`pg_ctl start -w` returns once it accepts connections.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
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


def start_server() -> PgServer:
    """initdb into a new temp dir and start it; raise NoPostgres when there is none."""
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
        server._run(
            str(path / "initdb"),
            "-D",
            str(server.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        with (server.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "\nlisten_addresses = '127.0.0.1'\nfsync = off\nsynchronous_commit = off\n"
                "full_page_writes = off\nmax_connections = 200\nshared_buffers = 64MB\n"
            )
        server.start()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server

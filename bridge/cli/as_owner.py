"""Read-only operator commands run as root on a service's home: they run as its owner.

On a systemd install the home (/var/lib/roost) belongs to the `roost` user, and an
operator types `sudo roost access list`. A command that writes into the home refuses
another user (`bridge.cli.main.owner_problem`, exit 78); the commands and verbs of
`AS_OWNER` only look (who is paired, the jobs, the usage, a prompt), yet opening the
database or a tenant's folders may create files (SQLite's `-wal`/`-shm`, a folder made
on first use) that root would own and the service could not read. So root running one
of them on a home of another user first becomes that user (`become_owner`: its groups,
gid and uid, before anything in the home is opened): whatever the command creates is
the owner's, as if the operator had typed `sudo -u roost roost ...`. The settings are
loaded before, so a root-only `/etc/roost/roost.toml` or `roost.env` still works; a
root-only file read later (`recall --batch /root/q.txt`) is refused with a line naming
it and the user the command runs as (`denied_as`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# command -> its read-only verbs (None: the whole command only reads)
AS_OWNER: dict[str, frozenset[str] | None] = {
    "access": frozenset({"list"}),
    "jobs": None,
    "usage": None,
    "tools": frozenset({"list"}),
    "vault": frozenset({"list"}),
    "style": frozenset({"status", "list-live"}),
    "prompt": None,
    "recall": None,
}


def reads_only(name: str, args: argparse.Namespace) -> bool:
    """Whether the command line chose a command (and verb) of `AS_OWNER`."""
    if name not in AS_OWNER:
        return False
    verbs = AS_OWNER[name]
    return verbs is None or getattr(args, f"{name.replace('-', '_')}_command", None) in verbs


def become_owner(home: Path) -> str | None:
    """As root, on a home of another user: take that user's groups, gid and uid (for
    good: the process cannot become root again), once it is seen that the user can read
    this roost (its interpreter, libraries and the home); else say why not, as nothing
    changed. Anyone else, or no home yet: nothing."""
    if os.geteuid() != 0:
        return None
    try:
        st = os.stat(home)
    except OSError:
        return None  # not made yet, or `home_problem`'s case
    if st.st_uid == 0:
        return None
    import pwd

    try:
        user = pwd.getpwuid(st.st_uid)
    except KeyError:  # an owner without a passwd entry: the home's group, no others
        name, gid, groups = f"#{st.st_uid}", st.st_gid, [st.st_gid]
    else:
        name, gid = user.pw_name, user.pw_gid
        groups = os.getgrouplist(name, gid)
    before = os.getgroups()
    os.setgroups(groups)
    os.setegid(gid)
    os.seteuid(st.st_uid)  # for a look only: the real and saved ids stay root's
    try:
        hidden = unreadable([home, *_installation()])
    finally:
        os.seteuid(0)
        os.setegid(0)
    if hidden is not None:
        os.setgroups(before)
        return (
            f"{home} belongs to the user {name.lstrip('#')}: this command runs as that user, "
            f"who cannot read {hidden}, part of this roost: run it with the roost the service "
            "runs (installed where its user can read it, e.g. /opt/roost/.venv/bin/roost)"
        )
    os.setgid(gid)
    os.setuid(st.st_uid)
    return None


def owner_name(uid: int) -> str:
    """The user name of `uid` (`#uid` when it has no passwd entry)."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"#{uid}"


def denied_as(args: argparse.Namespace, home: Path) -> str:
    """After `become_owner`: why a file root could read is refused (a file named on the
    command line, one the configuration points at), for the end of its line; "" when
    this process did not switch."""
    user = getattr(args, "as_owner", None)
    if user is None:
        return ""
    return (
        f" (this command runs as {user}, the owner of {home}, who may not read it: put it"
        " where that user can read it)"
    )


def _installation() -> list[Path]:
    """What this process will still read: its interpreter and each folder it imports from."""
    import sys

    found = [Path(os.path.realpath(sys.executable))]
    found += [Path(p) for p in sys.path if p and os.path.isdir(p)]
    return found


def unreadable(paths: list[Path]) -> Path | None:
    """The first of `paths` this process (its effective ids) cannot read, or None."""
    for path in paths:
        try:
            if path.is_dir():
                os.listdir(path)
            else:
                with open(path, "rb"):
                    pass
        except OSError:
            return path
    return None

"""The helper template: a pristine process with forge.worker imported, which forks
new sandbox helpers on the runner's request (forge.helper_fork is its runner side).

A helper started as `python -I -S` spends 130-190 ms of CPU before its `Hello`,
100-165 ms of it importing forge.worker. The template pays that once a runner;
each helper forked from it starts at its `prepare`. It runs with what a helper
runs with (`-I -S`, an empty environment, cwd `/`, its standard streams on /dev/null)
and never holds a tenant's data: no request, secret or tool reaches it, only the
three descriptors of each new helper and its command line.

The runner's control socket (SOCK_SEQPACKET, `control=FD`) carries one request
per helper: a JSON list, the helper's command line after the project root, with
its stdin's read end, its stdout's write end and, when it answers directly, its
answer socket and possibly its lending socket (forge.protocol.lending) (SCM_RIGHTS).
The template forks; the child puts them on 0, 1, 3 and 4 (`answers=3` and
`lend=4` are added to its command line), closes every other descriptor it
has, and runs forge.worker's `main`. The template answers with the child's pid
and a pidfd of it, opened before the child can be reaped: the runner signals and
watches that process and never one that reused its pid. The template reaps its
children (SIGCHLD), each once its pidfd exists. EOF on the control socket (the
runner closed it, or died) ends the template; the helpers it forked run on.

What forked helpers share with one another and the template: the address layout
(no fresh ASLR per helper) and the string hash seed. docs/security.md says why
that is accepted for helpers and refused for decoders, and how an operator turns
it off (`[forge] fork_helpers = false`).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import sys

ANSWERS_FD = 3  # where a forked helper finds its answer socket
LEND_FD = 4  # and its lending socket
MAX_REQUEST = 1 << 16
READY = b"ready"


class _Children:
    """The helpers forked so far whose pidfd the runner has. Only those are reaped: a
    child is never reaped before its pidfd exists (its pid could be reused)."""

    def __init__(self) -> None:
        self.pids: set[int] = set()

    def add(self, pid: int) -> None:
        self.pids.add(pid)
        self.reap()  # it may have exited already, its SIGCHLD come and gone

    def reap(self, _signum: int = 0, _frame: object = None) -> None:
        """Reap each known child that has exited."""
        for pid in list(self.pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.pids.discard(pid)


def _become_helper(control: socket.socket, fds: list[int], argv: list[str]) -> None:
    """In the forked child: take the helper's descriptors and run it (never returns)."""
    code = 1
    try:
        control.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
        keep = 2
        if len(fds) > 2:
            os.dup2(fds[2], ANSWERS_FD)
            keep = ANSWERS_FD
            argv = [*argv, f"answers={ANSWERS_FD}"]
        if len(fds) > 3:
            os.dup2(fds[3], LEND_FD)
            keep = LEND_FD
            argv = [*argv, f"lend={LEND_FD}"]
        os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))  # the template's and the copies
        sys.argv = [sys.argv[0], sys.argv[1], *argv]
        from forge.worker import main

        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:  # nothing of the template may run on in the child
        code = 1
    finally:
        os._exit(code)


def serve(control: socket.socket) -> None:
    """Fork a helper for each request until the control socket's EOF."""
    children = _Children()
    signal.signal(signal.SIGCHLD, children.reap)
    control.sendall(READY)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, MAX_REQUEST, 4)
        except OSError:
            return
        if not data:
            for fd in fds:
                os.close(fd)
            return
        try:
            argv = json.loads(data)
            if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
                raise ValueError("not a list of strings")
            if len(fds) not in (2, 3, 4):
                raise ValueError(f"{len(fds)} descriptors")
        except ValueError as exc:  # the runner broke the protocol: say so, fork nothing
            for fd in fds:
                os.close(fd)
            control.sendall(json.dumps({"error": str(exc)}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            _become_helper(control, fds, argv)
        pidfd = os.pidfd_open(pid)  # before the child can be reaped: it is not known yet
        children.add(pid)
        for fd in fds:
            os.close(fd)
        try:
            socket.send_fds(control, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control_fd = -1
    for arg in sys.argv[2:]:
        if arg.startswith("control="):
            control_fd = int(arg.removeprefix("control="))
    if control_fd < 0:
        sys.exit("forge.template: no control=FD")
    import forge.worker  # noqa: F401 - what every helper would import: now, once

    # what the imports made is never collected, so no helper's collection walks it
    # (and copies its pages, as a walk writes to every object's header)
    gc.collect()
    gc.freeze()
    control = socket.socket(fileno=control_fd)
    serve(control)
    sys.exit(0)

"""Change generations of directories, from inotify: a cached file needs no `stat` until
its directory reports an event.

`DirWatch.generation(directory)` watches the directory (and, under one of the
`roots`, every directory between it and the root) and returns a number that
changes whenever anything in the directory changed since: a file written,
its attributes changed, an entry created, deleted or renamed. Before it
answers it takes every event the kernel has queued (one `poll` with no
wait when there is none; when there is, that look and a read, and more reads
only while one fills the buffer). The kernel queues an event before the write,
rename or unlink that caused it returns, so a change made before a call is
always seen by it (before a `batch`, by every call inside it: it looks once).
`unchanged(stamps)` checks many such generations at once (one look at the
queue), for a memo built from files in several directories.
`generations(directory)` returns that generation and the
directory's entries generation, which moves only when an entry is created,
deleted or renamed there, or the directory's own attributes change: all that
can make a missing name appear (a file written in place, such as a database's
log beside it, leaves it alone). `name_generation(directory, name)` is the
generation of one entry: it moves with every event that names it and every
event of the directory itself, so a file is vouched for while the files
beside it are written. A name whose last event removed it (the temporary name
of an atomic save, renamed away) is forgotten, a batch at a time
(`_GONE_MAX`): the names of the directory no event has named since move then
(each such file is checked once more), those named since keep theirs, so a
daemon saving for months holds the names that exist, not every one it saw.
`named_since(directory, generation)` says which names events named since a
generation of the directory, so a memo of many files in one directory looks at
the stamps of those files alone, not at every one, when one of them moved.

A rename, deletion or creation of a directory on the way from a root to a
watched directory, a lost watch or an overflowed queue changes every
generation at once. `generation` returns None for a directory that cannot
be watched (outside every root, missing, no inotify, out of watches or
instances): the caller then checks with `stat` as before. Linux only;
elsewhere `open()` returns None.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import select
import struct
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_ISDIR = 0x40000000
_ENTRIES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_SELF = IN_DELETE_SELF | IN_MOVE_SELF
_WHOLE = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | _ENTRIES | _SELF  # a watched directory
_PATH = _ENTRIES | _SELF  # a directory on the way to one: only entries moving matter
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
# the largest event: its name (NAME_MAX 255 and a NUL) padded to a multiple of the header
_EVENT_MAX = _EVENT.size + 256
_READ_SIZE = 64 * 1024  # one read of the queue

_libc: ctypes.CDLL | None = None
_ident = threading.get_ident

# a directory, which of its generations ("": all of it, "/": its entries, else the name
# of one entry in it), and that generation
Stamp = tuple[str, str, int]
ALL, ENTRIES = "", "/"
_NAMES_MAX = 65_536  # names of one directory with their own generation (more: all start again)
_GONE_MAX = 1024  # names removed from one directory remembered before they are forgotten
_REMOVED = IN_DELETE | IN_MOVED_FROM
_LOG_MAX = 256  # entries created and removed remembered per directory (`entry_changes`)
_NAMED_MAX = 1024  # events naming an entry remembered per directory (`named_since`)


def _c() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        # the process's own symbols hold libc's on Linux; `find_library` (which runs
        # `ldconfig -p`, a process) only where they do not
        libc = ctypes.CDLL(None, use_errno=True)
        if not hasattr(libc, "inotify_init1"):
            name = ctypes.util.find_library("c")
            if name is None:
                return None
            libc = ctypes.CDLL(name, use_errno=True)
        _libc = libc
    return _libc


class DirWatch:
    """One inotify instance; `generation(directory)` as the module says. Thread-safe."""

    def __init__(self, fd: int, roots: tuple[str, ...]) -> None:
        self._fd = fd
        self._roots = roots
        self._ready = _readiness(fd)
        self._lock = threading.Lock()
        self._tick = 0  # counts events: a generation is the tick of its last change
        self._gens: dict[str, int] = {}  # watched directory -> its generation
        self._entries: dict[str, int] = {}  # watched directory -> its entries' generation
        # watched directory -> the generation of a name no event named since (and the least)
        self._born: dict[str, int] = {}
        # watched directory -> name -> its generation (of the last event naming it, since
        # the directory's `_born`), and the names whose last event removed them
        self._names: dict[str, dict[str, int]] = {}
        self._gone: dict[str, set[str]] = {}
        # watched directory -> (the generation since which its log holds every entry
        # created or removed, the log: (generation, created?, name) oldest first)
        self._logs: dict[str, tuple[int, list[tuple[int, bool, str]]]] = {}
        # watched directory -> (the generation since which it holds every event naming an
        # entry, the names of those events: (generation, name) oldest first)
        self._told: dict[str, tuple[int, list[tuple[int, str]]]] = {}
        self._on_path: set[str] = set()  # directories between a root and a watched one
        self._dirs: dict[int, str] = {}  # wd -> directory
        self._masks: dict[str, int] = {}  # directory -> the events asked for
        self._owner: int | None = None  # the thread inside a `batch`
        self._closed = False
        self._finalizer = weakref.finalize(self, os.close, fd)

    @classmethod
    def open(cls, roots: tuple[str, ...]) -> DirWatch | None:
        """A watch over the `roots` on local file systems, or None (no inotify, or none
        of them is local: a network file system does not report other machines' changes)."""
        libc = _c()
        local = tuple(r for r in (os.path.realpath(r) for r in roots) if _local(r))
        if libc is None or not local or not hasattr(libc, "inotify_init1"):
            return None
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            log.info("no inotify (%s): cached files are checked with stat", _err())
            return None
        return cls(fd, local)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._finalizer()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Inside, in this thread, the queue is looked at once, on entry: every answer
        is as of then, as if every call were made at once (a change made inside is
        seen after it, or by a call that has to wait for the lock). For a computation
        that only reads (the prompt's snapshot): its generations are taken no later
        than its reads, so a change during it moves them. One thread at a time (the
        others, meanwhile, look at the queue on every call as outside)."""
        me = threading.get_ident()
        if self._owner == me:
            yield
            return
        with self._lock:
            if not self._closed:
                self._drain()
            mine = self._owner is None
            if mine:
                self._owner = me
        try:
            yield
        finally:
            if mine:
                self._owner = None

    def generation(self, directory: str) -> int | None:
        """The directory's change generation (None: cannot be watched; check with stat)."""
        both = self.generations(directory)
        return None if both is None else both[0]

    def entries_generation(self, directory: str) -> int | None:
        """The generation of the directory's entries and own attributes (None: as above)."""
        both = self.generations(directory)
        return None if both is None else both[1]

    def generations(self, directory: str) -> tuple[int, int] | None:
        """(generation, entries generation) of the directory, or None as above."""
        # No event queued and no drain half-way (checked in this order): the generations
        # are those of every change made so far, read without the lock.
        owner = self._owner  # an event queued? (one `poll`; none inside this thread's `batch`)
        queued = False  # the look below saw an event: the drain reads without looking again
        if not self._closed:
            queued = (owner is None or owner != _ident()) and self._ready()
            if not queued and not self._lock.locked():
                gen, entries = self._gens.get(directory), self._entries.get(directory)
                if gen is not None and entries is not None:
                    return gen, entries
        with self._lock:
            if not self._caught_up(directory, queued):
                return None
            return self._gens[directory], self._entries[directory]

    def _caught_up(self, directory: str, queued: bool = False) -> bool:
        """Under the lock: every queued event drained and `directory` watched (False:
        the watch is closed, or the directory cannot be watched). `queued`: as `_drain`."""
        if self._closed:
            return False
        self._drain(queued)
        return directory in self._gens or self._watch(directory)

    def name_generation(self, directory: str, name: str) -> int | None:
        """The generation of one entry of the directory: moves with every event naming
        it, and with every event of the directory itself (None: as `generation`). A file
        written beside it (a database's log) leaves it alone."""
        owner = self._owner  # an event queued? (one `poll`; none inside this thread's `batch`)
        queued = False
        if not self._closed:
            queued = (owner is None or owner != _ident()) and self._ready()
            if not queued and not self._lock.locked():
                born = self._born.get(directory)
                if born is not None:
                    return self._name_gen(directory, name, born)
        with self._lock:
            if not self._caught_up(directory, queued):
                return None
            return self._name_gen(directory, name, self._born[directory])

    def entry_changes(
        self, directory: str, since: int
    ) -> tuple[int, list[tuple[bool, str]]] | None:
        """The directory's generation now and every entry created (True) or removed
        (False) there after generation `since`, oldest first: a listing taken after
        `since` was its generation, with these applied in order, is the listing now.
        None when that is not known (the directory was not watched all along, its own
        attributes changed, or more changed than is remembered)."""
        with self._lock:
            if not self._caught_up(directory):
                return None
            log = self._logs.get(directory)
            if log is None or since < log[0]:
                return None
            ops = log[1]
            start = len(ops)
            while start and ops[start - 1][0] > since:
                start -= 1
            return self._gens[directory], [(made, name) for _, made, name in ops[start:]]

    def named_since(self, directory: str, since: int) -> set[str] | None:
        """The names of the directory an event named after its generation `since`: the
        only ones whose `name_generation` may differ from what it was then (None: not
        known, or every name's moved: the directory's own event, names forgotten, more
        events than are remembered, not watched all along)."""
        with self._lock:
            if not self._caught_up(directory):
                return None
            told = self._told.get(directory)
            if told is None or since < told[0] or self._born[directory] > since:
                return None
            events = told[1]
            out = set()
            for i in range(len(events) - 1, -1, -1):
                tick, name = events[i]
                if tick <= since:
                    break
                out.add(name)
            return out

    def _name_gen(self, directory: str, name: str, born: int) -> int:
        names = self._names.get(directory)
        return born if names is None else names.get(name, born)

    def unchanged(self, stamps: Iterable[Stamp]) -> bool:
        """Whether every `(directory, entries, generation)` still holds: one look at the
        queue for all of them (False for a directory no longer watched)."""
        return self.moved(stamps, first=True) == set()

    def moved(self, stamps: Iterable[Stamp], first: bool = False) -> set[Stamp] | None:
        """The stamps that no longer hold (`first`: stop at one), after one look at the
        queue; None when the watch is closed (none holds)."""
        if self._closed:
            return None
        owner = self._owner  # an event queued? (one `poll`; none inside this thread's `batch`)
        queued = (owner is None or owner != _ident()) and self._ready()
        if queued or self._lock.locked():
            with self._lock:
                if self._closed:
                    return None
                self._drain(queued)
        gens, entries, born, names = self._gens, self._entries, self._born, self._names
        out: set[Stamp] = set()
        for stamp in stamps:
            directory, which, gen = stamp
            if which == ALL:
                now = gens.get(directory)
            elif which == ENTRIES:
                now = entries.get(directory)
            else:
                least = born.get(directory)
                if least is None:
                    now = None
                else:
                    named = names.get(directory)
                    now = least if named is None else named.get(which, least)
            if now != gen:
                out.add(stamp)
                if first:
                    break
        return out

    def _root_of(self, directory: str) -> str | None:
        for root in self._roots:
            if directory == root or directory.startswith(root.rstrip("/") + "/"):
                return root
        return None

    def _watch(self, directory: str) -> bool:
        """Watch `directory` and the directories from its root to it; False if it cannot."""
        root = self._root_of(directory)
        if root is None or os.path.realpath(directory) != directory:
            return False  # a symlink on the way: its target could change unseen
        above, parent = [], directory
        while parent != root:
            parent = os.path.dirname(parent)
            above.append(parent)
        for path in above:
            if path not in self._on_path:
                if not self._add(path, _PATH):
                    return False
                self._on_path.add(path)
        if not self._add(directory, _WHOLE):
            return False
        self._gens[directory] = self._entries[directory] = self._born[directory] = self._tick
        self._logs[directory] = (self._tick, [])
        self._told[directory] = (self._tick, [])
        return True

    def _add(self, directory: str, mask: int) -> bool:
        """Ask for `mask` too (a directory has one watch: the masks are joined)."""
        libc = _c()
        assert libc is not None
        joined = self._masks.get(directory, 0) | mask
        wd = libc.inotify_add_watch(self._fd, os.fsencode(directory), joined | IN_ONLYDIR)
        if wd < 0:
            log.debug("cannot watch a directory (%s): stat instead", _err())
            return False
        self._dirs[wd] = directory
        self._masks[directory] = joined
        return True

    def _drain(self, queued: bool = False) -> None:
        """Take every event queued before the call. `queued`: the caller's look at the
        queue, just now, saw one, so the first read is made without looking again (when
        another thread took it meanwhile, the read finds nothing). A read that left room
        for the largest event emptied the queue as it was then (the kernel hands out
        events while the next one fits): no look after it; a fuller read reads again."""
        if not queued and not self._ready():
            return
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                return
            self._events(data)
            if len(data) <= _READ_SIZE - _EVENT_MAX:
                return

    def _events(self, data: bytes) -> None:
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, pos)
            name = data[pos + _EVENT.size : pos + _EVENT.size + size].rstrip(b"\0")
            pos += _EVENT.size + size
            if mask & (IN_Q_OVERFLOW | IN_IGNORED | _SELF):
                self._forget(wd)
                continue
            directory = self._dirs.get(wd)
            if directory is None:
                continue
            if directory in self._gens:
                self._tick += 1
                self._gens[directory] = self._tick
                if mask & _ENTRIES or (mask & IN_ATTRIB and not name):  # not name: itself
                    self._entries[directory] = self._tick
                if not name:  # the directory itself: every entry's generation moves
                    self._restart(directory)
                else:
                    decoded = os.fsdecode(name)
                    self._named(directory, decoded, mask)
                    if mask & _ENTRIES:
                        self._logged(directory, decoded, not mask & _REMOVED)
            if mask & _ENTRIES:
                entry = os.path.join(directory, os.fsdecode(name))
                if entry in self._on_path or entry in self._gens:
                    self._everything()  # a directory on the way moved, went or came

    def _named(self, directory: str, name: str, mask: int) -> None:
        """An event of the directory named `name` (at `_tick`)."""
        names = self._names.get(directory)
        if names is None:
            names = self._names[directory] = {}
        elif len(names) >= _NAMES_MAX:  # too many names (that exist): all start again
            self._restart(directory)
            return
        names[name] = self._tick
        told = self._told.get(directory)
        if told is not None:
            events = told[1]
            events.append((self._tick, name))
            if len(events) > _NAMED_MAX:
                dropped = events[: len(events) // 2]
                del events[: len(events) // 2]
                self._told[directory] = (dropped[-1][0], events)
        gone = self._gone.get(directory)
        if mask & _REMOVED:
            if gone is None:
                gone = self._gone[directory] = set()
            gone.add(name)
            if len(gone) >= _GONE_MAX:
                self._forget_gone(directory, names, gone)
        elif gone:
            gone.discard(name)

    def _logged(self, directory: str, name: str, made: bool) -> None:
        log = self._logs.get(directory)
        if log is None:
            return
        ops = log[1]
        ops.append((self._tick, made, name))
        if len(ops) > _LOG_MAX:
            dropped = ops[: len(ops) // 2]
            del ops[: len(ops) // 2]
            self._logs[directory] = (dropped[-1][0], ops)

    def _forget_gone(self, directory: str, names: dict[str, int], gone: set[str]) -> None:
        """Forget the names removed from the directory: from now on they answer its
        `_born`, moved here, as every name no event named does (such a file is checked
        once more); a name some event named keeps its generation."""
        for name in gone:
            del names[name]
        gone.clear()
        self._tick += 1
        self._born[directory] = self._tick

    def _restart(self, directory: str) -> None:
        """Every entry of the directory has a new generation (`_tick`)."""
        self._born[directory] = self._tick
        self._logs[directory] = (self._tick, [])
        self._told[directory] = (self._tick, [])
        self._names.pop(directory, None)
        self._gone.pop(directory, None)

    def _forget(self, wd: int) -> None:
        """A watch went away (or the queue overflowed): every generation changes and each
        directory is watched again, with the directories on its way, when next asked for."""
        directory = self._dirs.pop(wd, None) if wd >= 0 else None
        if directory is not None:
            self._masks.pop(directory, None)
        self._tick += 1
        self._gens.clear()
        self._entries.clear()
        self._born.clear()
        self._names.clear()
        self._gone.clear()
        self._logs.clear()
        self._told.clear()
        self._on_path.clear()

    def _everything(self) -> None:
        self._tick += 1
        self._gens = dict.fromkeys(self._gens, self._tick)
        self._entries = dict.fromkeys(self._gens, self._tick)
        self._born = dict.fromkeys(self._gens, self._tick)
        self._names.clear()
        self._gone.clear()
        self._logs = {d: (self._tick, []) for d in self._gens}
        self._told = {d: (self._tick, []) for d in self._gens}


_LOCAL_FS = frozenset(
    {
        0xEF53,  # ext2/3/4
        0x58465342,  # xfs
        0x9123683E,  # btrfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs
        0xF2F52010,  # f2fs
        0x2FC12FC1,  # zfs
    }
)


class _PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


def _readiness(fd: int) -> Callable[[], bool]:
    """Whether `fd` has an event to read now: one `poll` with no wait, made while this
    thread keeps the GIL (libc's through `ctypes.PyDLL`). `select.poll` lets the GIL go
    around it, and a thread waiting for the GIL (a writer back from its sync) is woken
    to take it, only for the loop to take it back a microsecond later: a futex wake-up
    and a context switch for nothing, a dozen times a turn. `select.poll` where libc's
    `poll` cannot be had."""
    try:
        native = ctypes.PyDLL(None).poll
    except (OSError, AttributeError):
        native = None
    if native is None:
        waiter = select.poll()
        waiter.register(fd, select.POLLIN)
        return lambda: bool(waiter.poll(0))
    native.restype = ctypes.c_int
    # the arguments made once, as ctypes objects: no conversion per call (0.41 us a call
    # against 0.63 with `argtypes`, 0.32 for `select.poll`); `byref` keeps its struct alive
    where, count, wait = (
        ctypes.byref(_PollFd(fd, select.POLLIN, 0)),
        ctypes.c_ulong(1),
        ctypes.c_int(0),
    )

    def ready() -> bool:
        return bool(native(where, count, wait) != 0)  # -1 (EINTR): look, as if there were events

    return ready


def _local(path: str) -> bool:
    """Whether `path` is on a local file system (inotify sees every change there)."""
    libc = _c()
    if libc is None or not hasattr(libc, "statfs"):
        return False
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(path), buf) != 0:
        return False
    return struct.unpack_from("l", buf.raw)[0] & 0xFFFFFFFF in _LOCAL_FS


def _err() -> str:
    return os.strerror(ctypes.get_errno())

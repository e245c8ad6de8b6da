"""A stat-checked cache of small files and directory listings.

`read(path)` returns the file's text (None if missing) and re-reads only when
the file's identity changed (inode, size, mtime, ctime); `listdir(path)`
does the same for a directory's entry names, and `stat_key(path)` for the
stat key itself. An unchanged file costs one `stat` call; with a `DirWatch`
(inotify, `bridge.core.dirwatch`) none at all while its directory reported
no event since the file was last checked. A file the watch cannot vouch for
is still checked with `stat` every time: one in a directory it cannot watch,
a symbolic link (its target may live elsewhere), a file with more than one
hard link (a write through another link is reported to another directory), or
a directory's own stat key (its parent hears nothing of its entries). A missing
file waits only on its directory's entries (`DirWatch.generations`): files
written beside it, such as a database's log, do not make it checked again. Writes
through a shared memory mapping raise no inotify event; nothing here maps.
`sig(path)` is the stat key used to detect changes.

A memo built from files (the prompt's snapshot) asks `recording()` for the
`Reads` of a computation: every `read`, `listdir` and `stat_key` made while
it is open, with the directory generation that vouches for each answer, and
`depend_on(directory)` for files read by other means (a SQLite database).
`still(reads)` then says whether every one of those answers would be the same
now: with the watch, one look at the inotify queue and a comparison per
directory while nothing changed there; otherwise each call is made again and
its answer compared (and the `Reads` moved to the current generations, so an
unrelated change in a directory costs that once). With the watch only the
answers of the generations that moved are made again and patched in
(`Reads.patch`), and a watched directory's listing is the kept one with the
entries created and removed since applied (`DirWatch.entry_changes`). `kept(key,
compute)` is the same for one value: computed again only when what it read
changed. `batch()`: inside, the watch's queue is looked at once.
"""

from __future__ import annotations

import os
import stat as st_mode
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import NamedTuple, TypeVar, cast

from bridge.core.dirwatch import ALL, ENTRIES, DirWatch, Stamp

StatKey = tuple[int, int, int, int] | None
T = TypeVar("T")


class _Seen(NamedTuple):
    """A path's stat key and the generation of its directory when it was taken (None:
    the watch cannot vouch for it; `stat` it next time)."""

    key: StatKey
    gen: int | None
    directory: str = ""  # whose generation `gen` is
    which: str = ALL  # ALL of it, its ENTRIES (`key` is None), or the name of the file


_READ, _LIST, _STAT, _DIR, _REAL = range(5)


class _Item(NamedTuple):
    """One answer a recorded computation used, and what vouches for it."""

    kind: int  # _READ, _LIST, _STAT, _DIR (everything in a directory), _REAL (a real path)
    path: str
    answer: object  # the text, listing or stat key handed out (None for _DIR)
    seen: _Seen


class Reads:
    """The file answers one computation used (`FileCache.recording`); `still` checks them."""

    __slots__ = (
        "_at",
        "_by_name",
        "_named",
        "_skip",
        "_skips",
        "coarse",
        "items",
        "loose",
        "stamps",
    )

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.stamps: tuple[Stamp, ...] = ()  # the generations that vouch for `items`
        self.loose: tuple[_Item, ...] = ()  # answers no generation vouches for
        # fewer, stricter stamps implying `stamps`: a directory's whole generation in
        # place of its files' own (any event there moves it)
        self.coarse: tuple[Stamp, ...] = ()
        self._named: frozenset[str] = frozenset()  # directories with a file's own stamp
        # stamp (None: no generation) -> the positions in `items` it vouches for, made
        # when first needed (`positions`) and kept up by `patch`
        self._at: dict[Stamp | None, list[int]] | None = None
        # (directory, which) -> its stamps, made when first needed (`suspects`) and
        # kept up by `patch`
        self._by_name: dict[tuple[str, str], dict[Stamp, None]] | None = None
        # `holds` moves the coarse stamps on, then lets this many more moves go by
        # (doubling up to 15: a directory written beside them on every turn costs a
        # sixteenth of that, one written once in a while once)
        self._skip = self._skips = 0

    def seal(self, watch: DirWatch | None) -> None:
        stamps: dict[Stamp, None] = {}
        loose = []
        for item in self.items:
            if item.seen.gen is None:
                loose.append(item)
            else:
                stamps[(item.seen.directory, item.seen.which, item.seen.gen)] = None
        self.stamps, self.loose, self._at = tuple(stamps), tuple(loose), None
        self._by_name = None
        self.coarse = self.stamps
        self._named = frozenset(d for d, which, _ in self.stamps if which not in (ALL, ENTRIES))
        if watch is None or not self._named:
            return
        # each directory's generation now, then its files' own checked unchanged since
        # they were read: a later event there moves the first, so it vouches for them
        whole = self.wholes(watch)
        if watch.moved(self.stamps):
            return  # something changed while it was computed: the fine stamps only
        self.coarse = self._coarse(whole)

    def wholes(self, watch: DirWatch) -> dict[str, int | None]:
        """The whole generation now of each directory with a file's own stamp."""
        return {d: watch.generation(d) for d in self._named}

    def _coarse(self, whole: dict[str, int | None]) -> tuple[Stamp, ...]:
        """The stamps, those of the directories of `whole` as its generations (taken
        before every stamp was last seen to hold, or was taken)."""
        wholes = {d: gen for d, gen in whole.items() if gen is not None}
        if not wholes:
            return self.stamps
        coarse = dict.fromkeys((d, ALL, gen) for d, gen in wholes.items())
        coarse.update(dict.fromkeys(s for s in self.stamps if s[0] not in wholes))
        return tuple(coarse)

    def recoarse_due(self) -> bool:
        """Whether `holds` moves the coarse stamps on this time (see `_skip`)."""
        if self._skip:
            self._skip -= 1
            return False
        self._skip = self._skips = min(self._skips * 2 + 1, 15)
        return True

    def recoarse(self, whole: dict[str, int | None]) -> None:
        """Every stamp was seen to hold after `whole` (`wholes`) was taken: the coarse
        stamps from those generations (a change elsewhere in a directory moved them)."""
        self.coarse = self._coarse(whole)

    def suspects(self, moved: set[Stamp], watch: DirWatch) -> list[Stamp] | None:
        """The stamps that may have moved, given the coarse stamps that did: a
        directory's whole generation stands for its files' own, every one of which held
        when it was taken (`seal`, `recoarse`, `patch`), so only the names an event
        named since (`DirWatch.named_since`) and the directory's other stamps may
        have. None when the watch does not know: every stamp may have."""
        by = self._by_name
        if by is None:
            by = self._by_name = {}
            for stamp in self.stamps:
                by.setdefault((stamp[0], stamp[1]), {})[stamp] = None
        out: list[Stamp] = []
        for stamp in moved:
            directory, which, gen = stamp
            if which != ALL or directory not in self._named:
                out.append(stamp)  # a stamp of its own (`_coarse` keeps those)
                continue
            names = watch.named_since(directory, gen)
            if names is None:
                return None
            for name in (*names, ALL, ENTRIES):
                out += by.get((directory, name), ())
        return out

    def positions(self) -> dict[Stamp | None, list[int]]:
        """Which items each stamp vouches for (None: the loose ones)."""
        at = self._at
        if at is None:
            at = {}
            for i, item in enumerate(self.items):
                seen = item.seen
                key = None if seen.gen is None else (seen.directory, seen.which, seen.gen)
                at.setdefault(key, []).append(i)
            self._at = at
        return at

    def patch(
        self, again: dict[int, _Item], moved: set[Stamp], whole: dict[str, int | None]
    ) -> None:
        """The items at the positions of `again` answered again (every item of a
        `moved` stamp and every loose one among them); `whole` taken before the other
        stamps were seen to hold (`wholes`)."""
        at = self.positions()
        by = self._by_name
        for stamp in moved:
            at.pop(stamp, None)
            if by is not None:
                by.get((stamp[0], stamp[1]), {}).pop(stamp, None)
        at.pop(None, None)
        named = set(self._named)
        for i, item in again.items():
            self.items[i] = item
            seen = item.seen
            key = None if seen.gen is None else (seen.directory, seen.which, seen.gen)
            at.setdefault(key, []).append(i)
            if key is not None:
                if by is not None:
                    by.setdefault((key[0], key[1]), {})[key] = None
                if key[1] not in (ALL, ENTRIES):
                    named.add(key[0])
        if None in at:
            self.stamps = tuple(k for k in at if k is not None)
        else:
            self.stamps = cast("tuple[Stamp, ...]", tuple(at))
        self.loose = tuple(self.items[i] for i in at.get(None, ()))
        self._named = frozenset(named)
        self.coarse = self._coarse(whole)


def sig(path: Path | str) -> StatKey:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileCache:
    """Texts and listings keyed by path; safe to share between tenants (keys are paths).

    `watch`: a `DirWatch` to skip the `stat` of files whose directory saw no change
    (the composition root owns it and closes it)."""

    def __init__(self, max_entries: int = 4096, watch: DirWatch | None = None) -> None:
        self._texts: dict[str, tuple[_Seen, str | None]] = {}
        self._dirs: dict[str, tuple[_Seen, tuple[str, ...]]] = {}
        self._keys: dict[str, _Seen] = {}
        self._max = max_entries
        self._watch = watch
        self.reads = 0  # files actually opened (for tests and the benchmark)
        self.stats = 0  # stat calls made (for tests and the benchmark)
        # open recordings; another thread's calls meanwhile are recorded too (harmless:
        # a memo then depends on more than it needs)
        self._recording: list[Reads] = []
        self._kept: dict[Hashable, tuple[Reads, object]] = {}  # `kept`: key -> (reads, value)

    @property
    def watch(self) -> DirWatch | None:
        """The directory watch that vouches for its answers (None: `stat` every time)."""
        return self._watch

    @contextmanager
    def recording(self) -> Iterator[Reads]:
        """The `Reads` of what runs inside: every answer this cache hands out meanwhile."""
        reads = Reads()
        self._recording.append(reads)
        try:
            yield reads
        finally:
            self._recording.remove(reads)
            reads.seal(self._watch)

    def batch(self) -> AbstractContextManager[None]:
        """Inside, the watch's queue is looked at once (`DirWatch.batch`): for a
        computation that only reads."""
        return self._watch.batch() if self._watch is not None else nullcontext()

    def kept(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept under `key` while what it read through this cache is
        unchanged (`still`). A recording open around it depends on what it read, kept
        or not."""
        hit = self._kept.get(key)
        if hit is not None and self.still(hit[0]):
            for outer in self._recording:
                outer.items.extend(hit[0].items)
            return cast(T, hit[1])
        with self.recording() as reads:
            value = compute()
        if len(self._kept) >= self._max:
            self._kept.clear()
        self._kept[key] = (reads, value)
        return value

    def _note(self, kind: int, path: str, answer: object, seen: _Seen) -> None:
        for reads in self._recording:
            reads.items.append(_Item(kind, path, answer, seen))

    def depend_on(self, directory: Path | str) -> None:
        """Record that the computation depends on everything in `directory` (files it
        reads by other means): without a watch over it, `still` is never true."""
        if not self._recording:
            return
        key = str(directory)
        both = self._watch.generations(key) if self._watch is not None else None
        seen = _Seen(None, None if both is None else both[0], key)
        self._note(_DIR, key, None, seen)

    def moved(self, stamps: tuple[Stamp, ...]) -> set[Stamp] | None:
        """Which of these generations moved (None: no watch vouches for any)."""
        return self._watch.moved(stamps) if self._watch is not None else None

    def real_path(
        self, path: str, resolve: Callable[[str], str] = os.path.realpath, depend: bool = False
    ) -> str:
        """`resolve(path)` (the real path; `resolve` answers as `os.path.realpath` does).
        When it differs from `path` (a link on the way, which may be moved without an
        event in any directory read), or `depend` says so (a missing path, where a
        dangling link may appear and look just as missing), a recording depends on it:
        checked every time."""
        hit = self._keys.get(path)
        vouched = hit is not None and self._real_as_is(path, hit)
        real = path if vouched else resolve(path)
        if self._recording and (depend or real != path):
            # vouched: by the generation that vouched (checked again only when it moves)
            self._note(_REAL, path, real, hit if vouched and hit is not None else _Seen(None, None))
        return real

    def _real_as_is(self, path: str, hit: _Seen) -> bool:
        """Whether `path` is its own real path by what the watch vouches for: a file
        vouched for by its own name (its directory is watched, so real, and the name no
        link: nothing on the way moved since, or it would not be), or a name missing
        from a watched directory whose entries did not move since (a link appearing
        there, dangling or not, is an entry created)."""
        if hit.which == ALL:
            return False
        if hit.which == ENTRIES:
            name = path[len(hit.directory) + 1 :]
            plain = path.startswith(hit.directory + "/") and name not in ("", ".", "..")
            if not plain or "/" in name:
                return False
        return self._fresh(hit)

    def loose_hold(self, reads: Reads) -> bool:
        """Whether the answers of `reads` no generation vouches for are the same now."""
        if not reads.loose:  # the usual case: every answer vouched for
            return True
        return all(self._again(item) is not None for item in reads.loose)

    def still(self, reads: Reads) -> bool:
        """Whether every answer in `reads` would be the same now."""
        return self._recheck(reads, texts_may_change=False) is not None

    def changed_texts(self, reads: Reads) -> dict[str, str | None] | None:
        """The files of `reads` whose text changed, with their text now ({}: `still`),
        `reads` moved to today's answers; None when anything else changed (a listing,
        a stat key, a directory, a link). A memo of many files (the memory topics) then
        works out again only what the changed files hold."""
        return self._recheck(reads, texts_may_change=True)

    def _recheck(self, reads: Reads, texts_may_change: bool) -> dict[str, str | None] | None:
        watch = self._watch
        if watch is None:
            return self._redo_all(reads, texts_may_change)
        moved = watch.moved(reads.coarse, first=True)
        if moved is None:
            return self._redo_all(reads, texts_may_change)
        if not moved:
            return {} if self.loose_hold(reads) else None
        # some directory changed: which of the files in it, exactly? Only those are
        # answered again (and their stamps replaced); the directories' generations are
        # taken first, so that they vouch for every stamp seen to hold after
        whole = reads.wholes(watch)
        coarse = watch.moved(reads.coarse)
        suspects = reads.suspects(coarse, watch) if coarse is not None else None
        moved = watch.moved(reads.stamps if suspects is None else suspects)
        if moved is None:
            return self._redo_all(reads, texts_may_change)
        at = reads.positions()
        redo = [i for stamp in moved for i in at.get(stamp, ())]
        redo += at.get(None, ())
        texts: dict[str, str | None] = {}
        again: dict[int, _Item] = {}
        for i in redo:
            item = reads.items[i]
            fresh = self._redo(item)
            if fresh is None or (fresh.answer is not item.answer and fresh.answer != item.answer):
                if fresh is None or item.kind != _READ or not texts_may_change:
                    return None
                texts[item.path] = cast("str | None", fresh.answer)
            again[i] = fresh
        reads.patch(again, moved, whole)
        return texts

    def _redo_all(self, reads: Reads, texts_may_change: bool) -> dict[str, str | None] | None:
        """`_recheck` with nothing vouched for: every call made again."""
        fresh: list[_Item] = []
        texts: dict[str, str | None] = {}
        for item in reads.items:
            again = self._redo(item)
            if again is None or (again.answer is not item.answer and again.answer != item.answer):
                if again is None or item.kind != _READ or not texts_may_change:
                    return None
                texts[item.path] = cast("str | None", again.answer)
            fresh.append(again)
        reads.items = fresh  # the answers now, vouched for by today's generations
        reads.seal(self._watch)
        return texts

    def holds(self, reads: Reads) -> tuple[bool, bool]:
        """Whether every stamp of `reads` holds (not the loose answers), and whether
        their coarse stamps moved on to the directories' generations now (when they
        all hold, and not every time: `Reads.recoarse_due`)."""
        watch = self._watch
        if watch is None:
            return False, False
        whole = reads.wholes(watch) if reads.recoarse_due() else None
        moved = watch.moved(reads.stamps)
        if moved is None or moved:
            return False, False
        if whole is None:
            return True, False
        reads.recoarse(whole)
        return True, True

    def _again(self, item: _Item) -> _Item | None:
        """The call made again (recorded afresh), or None when its answer changed."""
        again = self._redo(item)
        if again is None or (again.answer is not item.answer and again.answer != item.answer):
            return None
        return again

    def _redo(self, item: _Item) -> _Item | None:
        """The call made again and recorded afresh (None: a directory's whole content,
        which nothing vouches for any more)."""
        if item.kind == _DIR:
            return None
        if item.kind == _REAL:
            return item._replace(answer=os.path.realpath(item.path))
        reads = Reads()
        self._recording.append(reads)
        try:
            if item.kind == _READ:
                self.read(item.path)
            elif item.kind == _LIST:
                self.listdir(item.path)
            else:
                self.stat_key(item.path)
        finally:
            self._recording.remove(reads)
        return reads.items[-1]

    def _fresh(self, seen: _Seen) -> bool:
        """Whether nothing changed in its directory (its entries, for a missing file; its
        own name, for a file) since `seen` was taken."""
        if seen.gen is None or self._watch is None:
            return False
        if seen.which == ALL:
            return self._watch.generation(seen.directory) == seen.gen
        if seen.which == ENTRIES:
            return self._watch.entries_generation(seen.directory) == seen.gen
        return self._watch.name_generation(seen.directory, seen.which) == seen.gen

    def _check(self, path: str, directory: str) -> _Seen:
        """The stat key of `path` now, with the generation taken before it (a change
        after the `stat` moves the generation, so it is seen next time)."""
        watch = self._watch
        both = watch.generations(directory) if watch is not None else None
        gen = None if both is None else both[0]
        name = os.path.basename(path)
        named = watch.name_generation(directory, name) if watch and both and name else None
        self.stats += 1
        try:
            found = os.lstat(path)
            if st_mode.S_ISLNK(found.st_mode):
                gen = None  # before the `stat`: a dangling link is vouched for by nothing
                found = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if both is None or gen is None:  # not watched, or a dangling link
                return _Seen(None, None, directory)
            return _Seen(None, both[1], directory, ENTRIES)
        key = (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        if st_mode.S_ISDIR(found.st_mode):
            if directory != path:  # its entries change its stat, and only it hears of them
                gen = None
        elif found.st_nlink > 1:
            gen = None
        elif gen is not None and named is not None and directory == os.path.dirname(path):
            # a file: vouched for by the events naming it (written, replaced, removed,
            # its attributes), whatever happens beside it
            return _Seen(key, named, directory, name)
        return _Seen(key, gen, directory)

    def stat_key(self, path: Path | str) -> StatKey:
        """`sig(path)`, without a `stat` while the watch vouches for it."""
        key = str(path)
        hit = self._keys.get(key)
        if hit is not None and self._fresh(hit):
            if self._recording:
                self._note(_STAT, key, hit.key, hit)
            return hit.key
        seen = self._check(key, os.path.dirname(key))
        if len(self._keys) >= self._max:
            self._keys.clear()
        self._keys[key] = seen
        if self._recording:
            self._note(_STAT, key, seen.key, seen)
        return seen.key

    def read(self, path: Path | str) -> str | None:
        key = str(path)
        hit = self._texts.get(key)
        if hit is not None and self._fresh(hit[0]):
            if self._recording:
                self._note(_READ, key, hit[1], hit[0])
            return hit[1]
        seen = self._check(key, os.path.dirname(key))
        if hit is not None and hit[0].key == seen.key and seen.key is not None:
            self._texts[key] = (seen, hit[1])
            if self._recording:
                self._note(_READ, key, hit[1], seen)
            return hit[1]
        text = None
        if seen.key is not None:
            self.reads += 1
            text = _read(key)
        if len(self._texts) >= self._max:
            self._texts.clear()
        # the stat taken before reading: a change during the read shows up next time
        kept = seen if text is not None or seen.key is None else _Seen(None, None)
        self._texts[key] = (kept, text)
        if self._recording:
            self._note(_READ, key, text, kept)
        return text

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        key = str(path)
        hit = self._dirs.get(key)
        if hit is not None and self._fresh(hit[0]):
            if self._recording:
                self._note(_LIST, key, hit[1], hit[0])
            return hit[1]
        if hit is not None:
            names = self._replayed(key, hit)
            if names is not None:
                return names
        parent = os.path.dirname(key)
        if hit is not None and hit[0].key is None and hit[0].directory == parent:
            seen = self._check(key, parent)  # it was missing: its parent says when it comes
            if seen.key is not None:
                seen = self._check(key, key)  # it came: watched from now on
        else:
            seen = self._check(key, key)  # a directory's own events change its generation
            if seen.key is None and seen.gen is None and self._watch is not None:
                again = self._check(key, parent)  # missing, so not watched: its creation
                if again.key is None:  # is an event of its parent
                    seen = again
        if hit is not None and hit[0].key == seen.key:
            self._dirs[key] = (seen, hit[1])
            if self._recording:
                self._note(_LIST, key, hit[1], seen)
            return hit[1]
        try:
            names = tuple(sorted(os.listdir(key)))
        except (FileNotFoundError, NotADirectoryError):
            names = ()
        self._dirs[key] = (seen, names)
        if self._recording:
            self._note(_LIST, key, names, seen)
        return names

    def _replayed(self, key: str, hit: tuple[_Seen, tuple[str, ...]]) -> tuple[str, ...] | None:
        """The listing of a watched directory now, from the one kept and the entries
        created and removed there since (`DirWatch.entry_changes`): no `listdir`, and
        the same tuple when they left it as it was (an atomic save); None when the
        watch does not know."""
        seen, names = hit
        if self._watch is None or seen.key is None or seen.gen is None:
            return None
        if seen.which != ALL or seen.directory != key:
            return None
        changes = self._watch.entry_changes(key, seen.gen)
        if changes is None:
            return None
        gen, ops = changes
        last = dict((name, made) for made, name in ops)  # each name's last change
        if any(made != _holds(names, name) for name, made in last.items()):
            now = set(names)
            now.update(name for name, made in last.items() if made)
            now.difference_update(name for name, made in last.items() if not made)
            names = tuple(sorted(now))
        # the directory's stat key is the one last taken: a `stat` path comparing it
        # lists again (harmless)
        seen = seen._replace(gen=gen)
        self._dirs[key] = (seen, names)
        if self._recording:
            self._note(_LIST, key, names, seen)
        return names


def _holds(names: tuple[str, ...], name: str) -> bool:
    """Whether the sorted `names` hold `name`."""
    i = bisect_left(names, name)
    return i < len(names) and names[i] == name


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


class NoCache(FileCache):
    """Reads every time (the benchmark's baseline and `--no-cache` checks); a memo built
    over it is never `still` good."""

    def moved(self, stamps: tuple[Stamp, ...]) -> set[Stamp] | None:
        return None

    def still(self, reads: Reads) -> bool:
        return False

    def stat_key(self, path: Path | str) -> StatKey:
        return sig(path)

    def read(self, path: Path | str) -> str | None:
        self.reads += 1
        return _read(str(path))

    def listdir(self, path: Path | str) -> tuple[str, ...]:
        try:
            return tuple(sorted(os.listdir(path)))
        except (FileNotFoundError, NotADirectoryError):
            return ()

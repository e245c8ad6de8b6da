"""Steering: always-on instructions from `STEERING.md` files, with `@path` includes.

Two files are read: `$ROOST_HOME/STEERING.md` (the operator's, every tenant)
and the tenant's own `STEERING.md`, combined operator first. An `@path` names
another file, resolved relative to the file that mentions it; it is appended
under a "Contents of" header if it is a real file inside the confinement
root, at most 3 levels deep and 20 files per tree, each file once (cycles are
safe). One that names a path outside the confinement, or a private file, gets
a note in the block saying it was not included and why (`roost prompt` shows
it; the note never says whether such a file exists). Anything else stays
plain text. A tree shares one character cap; a cut
is announced with a note naming the file.

Confinement: the operator's tree may reach files under `$ROOST_HOME` except
the tenants' directories and private files (database, tokens, audit); a
tenant's tree may reach only files the person controls under its own root: never
its vault, nor what others write there without asking the person (`workspace/`:
tools and attachments; `memory/`: the model's `memory_save`; `forge/`: tools'
code and counters). Text there is data, not standing instructions: an `@ref`
into them gets a note saying so. A line kept from chat with `/yes` is written
with its `@refs` made plain text (`kept_form`): no include comes from a kept line.
`SteeringCache` keeps each resolved tree with the stat keys of every path it
looked at, so an unchanged tree costs one `stat` per path (none while the file cache's
inotify watch saw no change in their directories), and the real path of each
named path with a symbolic link on the way (a link moved changes what it names
without an event in any directory read: it is resolved again each time). When
only included files' texts changed, each still a regular file at its own real
path, naming the same `@refs` in the same order, and the tree is within its cap
before and after, the tree is the one kept with those files' parts replaced
(`SteeringCache._patched`): no walk, no path resolved again, one read per changed
file (the differential test checks it against a fresh walk).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from bridge.core.filecache import FileCache, StatKey, sig
from bridge.types.tenant_dirs import TenantDirs

MAX_DEPTH = 3
MAX_FILES = 20
_REF = re.compile(r"(?<![\w@/`])@((?:~/|/|\.{1,2}/)?[A-Za-z0-9_][A-Za-z0-9_.\-/~]*)")
_TRAILING = ".,;:!?)"  # punctuation after a name ends the sentence, not the name
_PRIVATE_NAMES = frozenset({"roost.db", "roost.db-wal", "roost.db-shm", "web-token"})


_OFF_LIMITS = "tenants', audit and vault files are never included"
_WORKSPACE = "workspace/ holds what tools and attachments write, not your instructions"
_MEMORY = "memory/ is written by the assistant without asking you, not your instructions"
_FORGE = "forge/ holds your tools' code and counters, not your instructions"


@dataclass(frozen=True, slots=True)
class Confinement:
    root: str  # realpath of the directory includes must stay in
    # realpaths of subtrees that are off limits, each with the reason a note gives
    excluded: tuple[tuple[str, str], ...] = ()

    def allows(self, real: str) -> bool:
        return self.refusal(real) is None

    def refusal(self, real: str) -> str | None:
        """Why an include of `real` is refused (None: allowed). Says nothing of whether
        the file exists, so a note never tells a tenant what lies outside its root."""
        if not _within(real, self.root) or real == self.root:
            return "outside the files steering may include"
        for ex, why in self.excluded:
            if _within(real, ex):
                return why
        if os.path.basename(real) in _PRIVATE_NAMES:
            return "a private file (database, token)"
        return None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def operator_confinement(home: Path) -> Confinement:
    real = os.path.realpath(home)
    excluded = (
        (os.path.join(real, "tenants"), _OFF_LIMITS),
        (os.path.join(real, "audit"), _OFF_LIMITS),
    )
    return Confinement(real, excluded)


def tenant_confinement(dirs: TenantDirs) -> Confinement:
    """Includes stay in the tenant's directory, among the files the person controls
    (`USER.md`, `skills/`, files they made): never its vault, and never a file written
    without the person's say (`workspace/`, `memory/`, `forge/`)."""
    real = os.path.realpath(dirs.root)
    excluded = (
        (os.path.realpath(dirs.vault), _OFF_LIMITS),
        (os.path.realpath(dirs.workspace), _WORKSPACE),
        (os.path.realpath(dirs.memory), _MEMORY),
        (os.path.realpath(dirs.tools.parent), _FORGE),  # forge/: tools/ and usage.sqlite
    )
    return Confinement(real, excluded)


class _Visit(NamedTuple):
    """A file the walk included: where its part is in `_Walk.parts`, and what made it."""

    depth: int
    label: str
    refs: tuple[str, ...]  # the `@refs` its text names, in order
    at: int  # its index in `parts` (-1: none, the cap was used up)


def _refs(text: str) -> tuple[str, ...]:
    return tuple(m.group(1) for m in _REF.finditer(text))


def _part(text: str, depth: int, label: str) -> str:
    """What a file adds to its tree (before the cap)."""
    return text.strip("\n") if depth == 0 else f"--- Contents of {label} ---\n{text.strip()}"


def _joined(parts: list[str], notes: list[str]) -> str:
    text = "\n\n".join(p for p in parts if p.strip())
    if notes:
        text = f"{text}\n" + "\n".join(notes)
    return text.strip()


@dataclass(slots=True)
class _Walk:
    read: Callable[[str], str | None]
    conf: Confinement
    cap: int
    stat: Callable[[str], StatKey] = sig
    real: Callable[[str, bool], str] = field(default=lambda path, depend: real_path(path))
    is_file: Callable[[str, StatKey], bool] = field(default=lambda path, key: os.path.isfile(path))
    links: dict[str, str] = field(default_factory=dict)  # path with a link on the way -> real
    deps: dict[str, StatKey] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    parts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    used: int = 0
    files: int = 0

    refused: set[str] = field(default_factory=set)
    visits: dict[str, _Visit] = field(default_factory=dict)  # real path -> its visit

    def label(self, real: str) -> str:
        root = self.conf.root.rstrip("/") + "/"
        if real.startswith(root) and root != "/":  # both real paths: relpath's answer
            return real[len(root) :]
        return os.path.relpath(real, self.conf.root)

    def refuse(self, ref: str, why: str) -> None:
        """Say once, inside the block, why `@ref` was not included (as written)."""
        if ref not in self.refused and len(self.refused) < MAX_FILES:
            self.refused.add(ref)
            self.notes.append(f"[steering: @{ref} not included — {why}]")

    def add(self, text: str, label: str) -> None:
        room = self.cap - self.used if self.cap else len(text)
        if len(text) > room:
            kept = text[: max(0, room)]
            if "\n" in kept:
                kept = kept[: kept.rindex("\n")]
            self.notes.append(
                f"[steering: {label} cut at {len(kept):,} characters; "
                f"{len(text) - len(kept):,} more not shown — read the file for the rest]"
            )
            self.used = self.cap  # what is left after a cut is not enough for another file
            self.parts.append(kept)
            return
        self.used += len(text)
        self.parts.append(text)


def _candidate(ref: str, base_dir: str, real: Callable[[str, bool], str]) -> tuple[str, str]:
    """The path `ref` names (as written, resolved against `base_dir`) and its real path."""
    if ref.startswith("~/"):
        path = os.path.expanduser(ref)
    elif ref.startswith("/"):
        path = ref
    else:
        path = os.path.join(base_dir, ref)
    path = path.rstrip(_TRAILING)
    return path, real(path, False)


_O_PATH = getattr(os, "O_PATH", 0)


def real_path(path: str) -> str:
    """`os.path.realpath(path)`, for an existing path asked of the kernel: one `open`
    with O_PATH and a `readlink` of its /proc descriptor, instead of an `lstat` per
    component (4x faster); anything else (missing, a loop, no /proc) goes the long way."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


def _visit(walk: _Walk, real: str, depth: int) -> None:
    text = walk.read(real)
    if text is None:
        return
    walk.seen.add(real)
    walk.files += 1
    label = walk.label(real)
    refs = _refs(text)
    if walk.used >= walk.cap > 0:
        walk.visits[real] = _Visit(depth, label, refs, -1)
        walk.notes.append(f"[steering: {label} not included — the steering cap is used up]")
        return
    walk.visits[real] = _Visit(depth, label, refs, len(walk.parts))
    walk.add(_part(text, depth, label), label)
    base_dir = os.path.dirname(real)
    for ref in refs:
        named, target = _candidate(ref, base_dir, walk.real)
        if named != target:  # a link on the way: moved, it names another file
            walk.links[named] = target
        why = walk.conf.refusal(target)
        if why is not None:
            walk.refuse(ref.rstrip(_TRAILING), why)
            continue
        if target in walk.seen:
            continue
        stat = walk.stat(target)
        walk.deps[target] = stat
        if stat is None and named == target:  # missing: a dangling link there looks the same
            walk.links[named] = walk.real(named, True)
        if stat is None or not walk.is_file(target, stat):
            continue  # missing or a directory: plain text
        if depth + 1 > MAX_DEPTH:
            walk.notes.append(
                f"[steering: {walk.label(target)} not included — more than "
                f"{MAX_DEPTH} levels of @includes]"
            )
            continue
        if walk.files >= MAX_FILES:
            walk.notes.append(
                f"[steering: {walk.label(target)} not included — at most {MAX_FILES} files]"
            )
            continue
        _visit(walk, target, depth + 1)


class Deps(NamedTuple):
    """What a resolved tree depended on: the stat key of every path it looked at, and the
    real path of each named one with a link on the way."""

    stats: dict[str, StatKey]
    links: dict[str, str]


def resolve(
    top: Path,
    conf: Confinement,
    cap: int,
    read: Callable[[str], str | None],
    files: FileCache | None = None,
    is_file: Callable[[str, StatKey], bool] | None = None,
) -> tuple[str, Deps]:
    """The text of one steering tree and what it depended on; through `files` (stat keys,
    real paths: a memo recording there depends on them) when given. `is_file(path, key)`:
    whether the path with that stat key is a regular file (`os.path.isfile` by default)."""
    text, walk = _walked(top, conf, cap, read, files, is_file)
    return text, Deps(walk.deps, walk.links)


def _walked(
    top: Path,
    conf: Confinement,
    cap: int,
    read: Callable[[str], str | None],
    files: FileCache | None,
    is_file: Callable[[str, StatKey], bool] | None,
) -> tuple[str, _Walk]:
    """`resolve`, with the walk that made the text."""
    stat = files.stat_key if files is not None else sig
    walk = _Walk(read, conf, cap, stat)
    if is_file is not None:
        walk.is_file = is_file
    if files is not None:

        def through(path: str, depend: bool) -> str:
            return files.real_path(path, real_path, depend)

        walk.real = through
    real = walk.real(str(top), False)
    walk.deps[real] = stat(real)
    if real != str(top) or walk.deps[real] is None:
        walk.links[str(top)] = walk.real(str(top), True)
    if walk.deps[real] is not None:
        _visit(walk, real, 0)
    return _joined(walk.parts, walk.notes), walk


@dataclass(slots=True)
class _Tree:
    """A resolved tree as kept: its text, what it depended on, and the walk's pieces
    (`_patched` replaces some files' parts)."""

    text: str
    deps: Deps
    parts: list[str]
    notes: list[str]
    visits: dict[str, _Visit]
    used: int  # characters of the parts, against the cap


class SteeringCache:
    """Resolved trees by top file; re-resolved only when a path they depend on changed.

    Whether an included path is a regular file is kept by its stat key (an inode's kind
    never changes, and another file there has another key): a tree re-resolved after one
    include changed asks the kernel only about that one. A tree whose included files only
    changed their texts, not the `@refs` they name, is patched instead (`_patched`)."""

    def __init__(self, files: FileCache, cap: int, enabled: bool = True) -> None:
        self._files = files
        self._cap = cap
        self._enabled = enabled
        self._trees: dict[str, _Tree] = {}
        self._kinds: dict[tuple[str, StatKey], bool] = {}

    def _is_file(self, path: str, key: StatKey) -> bool:
        found = self._kinds.get((path, key))
        if found is None:
            found = os.path.isfile(path)
            if len(self._kinds) >= 4096:
                self._kinds.clear()
            self._kinds[(path, key)] = found
        return found

    def _links_hold(self, deps: Deps) -> bool:
        files = self._files
        return all(files.real_path(p, real_path, True) == r for p, r in deps.links.items())

    def text(self, top: Path, conf: Confinement) -> str:
        key = str(top)
        hit = self._trees.get(key)
        if self._enabled and hit is not None:
            stat = self._files.stat_key
            moved = {p: now for p, s in hit.deps.stats.items() if (now := stat(p)) != s}
            if not moved and self._links_hold(hit.deps):
                return hit.text
            tree = self._patched(hit, moved)
            if tree is not None:
                self._trees[key] = tree
                return tree.text
        is_file = self._is_file if self._enabled else None
        text, walk = _walked(top, conf, self._cap, self._files.read, self._files, is_file)
        self._trees[key] = _Tree(
            text, Deps(walk.deps, walk.links), walk.parts, walk.notes, walk.visits, walk.used
        )
        return text

    def _patched(self, tree: _Tree, moved: dict[str, StatKey]) -> _Tree | None:
        """`tree` with the parts of the `moved` files made from their texts now, when the
        walk would take the same course: each one an included file still (a regular file
        at its own real path) naming the same `@refs`, no link moved, and the tree within
        its cap before and after (no cut, no file left out for the cap). None otherwise:
        walk again."""
        cap = self._cap
        if (cap and tree.used >= cap) or not self._links_hold(tree.deps):
            return None
        files = self._files
        parts, used = list(tree.parts), tree.used
        for path, key in moved.items():
            visit = tree.visits.get(path)
            if visit is None or visit.at < 0 or key is None or not self._is_file(path, key):
                return None
            if files.real_path(path, real_path) != path:
                return None
            text = files.read(path)
            if text is None or _refs(text) != visit.refs:
                return None
            part = _part(text, visit.depth, visit.label)
            used += len(part) - len(parts[visit.at])
            parts[visit.at] = part
        if cap and used >= cap:
            return None
        stats = {**tree.deps.stats, **moved}
        deps = Deps(stats, tree.deps.links)
        return _Tree(_joined(parts, tree.notes), deps, parts, tree.notes, tree.visits, used)


# -- standing instructions kept from chat (bridge.corrections) --------------------------------

KEPT_HEADER = "## Standing instructions (kept from chat with /yes; edit or delete freely)"


def kept_lines(text: str) -> list[str]:
    """The bullet lines under `KEPT_HEADER` (without the "- "), in order."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.strip() == KEPT_HEADER:
            inside = True
        elif inside and line.startswith("#"):
            inside = False
        elif inside and line.startswith("- "):
            out.append(line[2:].strip())
    return out


def _inert(ref: re.Match[str]) -> str:
    name = ref.group(1).rstrip(_TRAILING)  # "see @notes.md." names notes.md
    return f"`@{name}`{ref.group(1)[len(name) :]}"


def kept_form(line: str) -> str:
    """`line` as a kept line is written (pure): one line, each `@ref` in backticks, which
    `_REF` never reads as an include (no match starts after a backtick, and a backtick
    only ever stops one), so a line kept from chat names files as plain text, never
    pulls one in."""
    return _REF.sub(_inert, " ".join(line.split()))


def with_kept_line(text: str, line: str, replaces: Callable[[str], bool]) -> tuple[str, str | None]:
    """`text` with `line` kept under `KEPT_HEADER` (pure), in its `kept_form`.

    The first kept line for which `replaces(old)` holds is replaced in place and
    returned; other such lines are dropped (conflicts never pile up). Without one,
    `line` is appended to the section (made at the end when missing).
    """
    one = kept_form(line)
    lines = text.splitlines()
    out: list[str] = []
    inside = found = False
    replaced: str | None = None
    for current in lines:
        if current.strip() == KEPT_HEADER:
            inside = found = True
        elif inside and current.startswith("#"):
            inside = False
        elif inside and current.startswith("- ") and replaces(current[2:].strip()):
            if replaced is None:
                replaced = current[2:].strip()
                out.append(f"- {one}")
            continue
        out.append(current)
    if replaced is None:
        if not found:
            out = [*out, "", KEPT_HEADER] if "".join(out).strip() else [KEPT_HEADER]
        end = _section_end(out)
        out.insert(end, f"- {one}")
    return "\n".join(out).strip("\n") + "\n", replaced


def _section_end(lines: list[str]) -> int:
    """Where a new line of the kept section goes: after its last bullet."""
    start = next(i for i, ln in enumerate(lines) if ln.strip() == KEPT_HEADER)
    end = start + 1
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("#"):
            break
        if lines[i].startswith("- "):
            end = i + 1
    return end

"""A tenant's tree made sure of once, then vouched for by inotify: `EnsuredDirs`.

Every turn makes sure the tenant's folders exist (`TenantDirs.ensure`: a `stat` of
each of its five leaves, about 7 us each here, and the tree made when one is missing:
a tool may have removed `workspace/outputs`). With a `DirWatch`, once the leaves
were made sure of, the entries generation of each leaf is kept: a leaf removed,
renamed or replaced (or a directory on its way from the watch's root) moves it, and
so does an entry made or removed in it. While none moved, the tree stands as it was
and no `stat` is needed; when one moved, or a leaf cannot be watched (outside the
watch's roots, a link on the way, no inotify), `ensure` runs as before. The
generations are taken after `ensure` returned, so a leaf removed meanwhile has
moved them (or cannot be watched: nothing is kept). Kept per tenant tree (its
leaves' paths: one tenant's answer is never another's), at most `KEPT` trees.
"""

from __future__ import annotations

from bridge.core.dirwatch import ENTRIES, DirWatch, Stamp
from bridge.types.tenant_dirs import TenantDirs

KEPT = 4096  # tenant trees whose generations are kept (all forgotten at once past it)


class EnsuredDirs:
    """`ensure(dirs)`: `dirs.ensure()`, skipped while the watch vouches for its leaves."""

    def __init__(self, watch: DirWatch | None) -> None:
        self._watch = watch
        self._stamps: dict[tuple[str, ...], tuple[Stamp, ...]] = {}

    def ensure(self, dirs: TenantDirs) -> TenantDirs:
        watch = self._watch
        if watch is None:
            return dirs.ensure()
        leaves = dirs.leaves
        stamps = self._stamps.get(leaves)
        if stamps is not None and watch.unchanged(stamps):
            return dirs
        dirs.ensure()
        made: list[Stamp] = []
        for leaf in leaves:
            gen = watch.entries_generation(leaf)
            if gen is None:  # cannot be vouched for: a stat of each, every turn
                self._stamps.pop(leaves, None)
                return dirs
            made.append((leaf, ENTRIES, gen))
        if len(self._stamps) >= KEPT:
            self._stamps.clear()
        self._stamps[leaves] = tuple(made)
        return dirs

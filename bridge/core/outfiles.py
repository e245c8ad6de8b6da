"""Files a reply hands out: confined to the tenant's own directories, no symlink on the way.

`open_out_file(top, path)` opens `path` for reading only when it lies under
`top` (a tenant's `tenants/<tid>` directory) with no symbolic link in any
component below `top`, and is a regular file; otherwise `OutFileError`.
Channels open files this way before they send them; `confine(final, dirs)`
(the core, before a reply leaves) drops any file of a `Final` that fails the
check and says so in the text.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import replace
from pathlib import Path

from bridge.types.messages import Final
from bridge.types.tenant_dirs import TenantDirs

log = logging.getLogger(__name__)
NOT_ATTACHED = "(A file of this reply could not be attached.)"


class OutFileError(Exception):
    """The file is not the tenant's to hand out (outside, a link, not a regular file)."""


def open_out_file(top: Path, path: Path) -> int:
    """An O_RDONLY descriptor of `path`, checked as the module says; the caller closes it."""
    top_abs, wanted = Path(os.path.abspath(top)), Path(os.path.abspath(path))
    if wanted == top_abs or not wanted.is_relative_to(top_abs):
        raise OutFileError("outside the tenant's directories")
    real_top = Path(os.path.realpath(top_abs))
    if Path(os.path.realpath(wanted.parent)) != real_top / wanted.parent.relative_to(top_abs):
        raise OutFileError("a symbolic link on the way")
    try:
        fd = os.open(wanted, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise OutFileError(f"cannot open ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutFileError("not a regular file")
    return fd


def confine(final: Final, dirs: TenantDirs) -> Final:
    """`final` with only the files the tenant may be handed (a note when one was dropped)."""
    if not final.files:
        return final
    kept = []
    for out in final.files:
        try:
            os.close(open_out_file(dirs.root.parent, out.path))
        except OutFileError as exc:
            log.warning("a reply's file was not attached: %s", exc)
            continue
        kept.append(out)
    if len(kept) == len(final.files):
        return final
    return replace(final, text=f"{final.text}\n\n{NOT_ATTACHED}", files=tuple(kept))

"""Pure checks of the paths and modes a tool passes to the path gate: a path
becomes workspace-relative components (or a clear refusal), a mode becomes
open flags. No file system access here (forge.pathgate opens)."""

from __future__ import annotations

import itertools
import os
import unicodedata

# a path below the workspace, in bytes as the kernel counts them (UTF-8): 1,024 characters
# of 4-byte emoji passed the workspace's path over the kernel's 4,096 (PATH_MAX)
MAX_PATH_BYTES = 1024
MAX_COMPONENT_BYTES = 255
_MODES = {
    "r": os.O_RDONLY,
    "w": os.O_WRONLY | os.O_CREAT,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


# a name must read as what it is wherever it is shown (a chat, a ZIP, a terminal, the web
# page): no control character (Cc: a newline broke `roost send`'s file lines), no format
# character (Cf: a bidirectional override or mark, `invoice\u202efdp.exe` reads as
# `invoiceexe.pdf`; a zero width; a soft hyphen), no line or paragraph separator (Zl, Zp:
# `str.splitlines()` breaks on them) and no lone surrogate (Cs: bytes that are not UTF-8,
# the export's ZIP could not name the file). One definition: bridge.senses.outputs shows a
# name holding one (made before the gate refused it) with each replaced by "_".
UNSHOWABLE_CATEGORIES = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


class PathDenied(PermissionError):
    """The gate refused a path; the message says why and what to do."""


def as_text(path: object) -> str:
    """An exact str: a str subclass could override split() or startswith()."""
    try:
        text = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise PathDenied("a path must be a string relative to the workspace")
    return str.__str__(text)


def unshowable(text: str) -> str | None:
    """The first character of `text` that does not print as it is, if any."""
    if text.isascii() and text.isprintable():
        return None
    return next((c for c in text if unicodedata.category(c) in UNSHOWABLE_CATEGORIES), None)


def encoded_len(name: str) -> int:
    """Bytes of `name` as the kernel gets it (UTF-8; surrogate escapes as their byte)."""
    return len(name.encode("utf-8", "surrogateescape"))


def components(path: object, root: str, allow_root: bool = False) -> list[str]:
    path = as_text(path)
    if "\x00" in path:
        raise PathDenied("path contains a NUL byte")
    too_long = f"a path must be 1-{MAX_PATH_BYTES} bytes long (UTF-8)"
    if not path or len(path) > MAX_PATH_BYTES:  # first: the next check looks at each character
        raise PathDenied(too_long)
    bad = unshowable(path)
    if bad is not None:
        raise PathDenied(
            f"path {path!r} holds U+{ord(bad):04X}, a control, format (bidirectional, zero "
            "width, soft hyphen), line-separator or non-UTF-8 character; "
            "use names that print as they are"
        )
    if encoded_len(path) > MAX_PATH_BYTES:
        raise PathDenied(too_long)
    if path.startswith("/"):
        if allow_root and path.rstrip("/") == root:
            return []
        if path == root or not path.startswith(root + "/"):
            where = (
                "/proc, /sys and /dev are"
                if path.split("/")[1] in ("proc", "sys", "dev")
                else "it is"
            )
            raise PathDenied(
                f"absolute path {path!r} refused: {where} outside the workspace; "
                "use a path relative to the workspace"
            )
        path = path[len(root) + 1 :]
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts and not allow_root:
        raise PathDenied("path names the workspace itself, not a file")
    for part in parts:
        if part == "..":
            raise PathDenied(f"'..' is not allowed in {path!r}; stay inside the workspace")
        if encoded_len(part) > MAX_COMPONENT_BYTES:
            raise PathDenied(f"a name in {path!r} is longer than {MAX_COMPONENT_BYTES} bytes")
    return parts


def parse_mode(mode: str) -> tuple[int, bool, str]:
    """(open flags, truncate, mode) of an open() mode; ValueError for an invalid one.
    Every valid mode's answer is looked up (`_PARSED`: the same answers, made by
    `_parse_mode` at import); only a mode not in it is parsed, to say why not."""
    if type(mode) is str:
        parsed = _PARSED.get(mode)
        if parsed is not None:
            return parsed
    return _parse_mode(mode)


def _parse_mode(mode: str) -> tuple[int, bool, str]:
    if not isinstance(mode, str) or len(set(mode)) != len(mode):
        raise ValueError(f"invalid mode {mode!r}")
    kinds = [c for c in mode if c in _MODES]
    if len(kinds) != 1 or any(c not in "rwaxbt+" for c in mode) or ("b" in mode and "t" in mode):
        raise ValueError(f"invalid mode {mode!r}; use r, w, a or x, optionally with b or +")
    flags = _MODES[kinds[0]]
    if "+" in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    return flags, kinds[0] == "w", mode


def _valid_modes() -> dict[str, tuple[int, bool, str]]:
    """Every mode `_parse_mode` accepts (at most one of each letter of "rwaxbt+"), with
    its answer."""
    out: dict[str, tuple[int, bool, str]] = {}
    for mode in itertools.chain.from_iterable(
        itertools.permutations("rwaxbt+", k) for k in range(1, 4)
    ):
        text = "".join(mode)
        try:
            out[text] = _parse_mode(text)
        except ValueError:
            continue
    return out


_PARSED = _valid_modes()

"""The profile: `USER.md`, one-liners about the person (`- key: value`), capped.

The person may edit the file by hand; `/profile set` and `/profile rm` change
one line and keep the rest as written. A change that would pass the cap, or
text that looks like a secret or an instruction, is refused and nothing is
written. A file that is not UTF-8 is named with its first bad byte's position
(`ProfileError`: a retry would never help) and never rewritten. Changes are
audited with the key and sizes only.
"""

from __future__ import annotations

import difflib
import errno
import re
from zoneinfo import ZoneInfo, available_timezones

from bridge.core.atomic import write_text
from bridge.core.locks import TenantLocks, file_lock
from bridge.screening.screen import refusal, screen
from bridge.screening.unicode_clean import clean
from bridge.types.audit_sink import AuditSink
from bridge.types.tenant_dirs import TenantDirs

HEADER = "# Profile: one line per fact about you. Edit freely, or use /profile set|rm."
KEY = re.compile(r"^[\w][\w .-]{0,31}$")
_LINE = re.compile(r"^- ([^:]{1,32}):\s?(.*)$")


class ProfileError(Exception):
    """Refused; the message says why. Nothing was written."""


ZONE_KEY = "timezone"  # `- timezone: Europe/Berlin`: the zone the person's times are read in


def known_zone(name: str) -> bool:
    """True when `name` is an IANA zone this host knows (`Europe/Berlin`, `UTC`)."""
    if not name or len(name) > 64:
        return False
    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return False
    return True


def check_zone(value: str) -> str:
    """The zone name `value` names, or ProfileError saying what would work."""
    name = value.strip()
    if known_zone(name):
        return name
    close = difflib.get_close_matches(name, sorted(available_timezones()), n=1, cutoff=0.7)
    hint = f" Did you mean {close[0]}?" if close else ""
    raise ProfileError(
        f"{name!r} is not a time zone I know.{hint} Use an IANA name such as "
        "Europe/Berlin, America/New_York or UTC."
    )


def body_lines(text: str) -> list[str]:
    """The lines the prompt shows and the cap counts (comments and blanks dropped).

    Cleaned like stored text (NFKC, hidden code points removed), so a USER.md
    edited by hand never carries invisible characters into the prompt.
    """
    lines = (clean(ln).rstrip() for ln in text.splitlines())
    return [ln for ln in lines if ln.strip() and not ln.startswith("#")]


def body_chars(text: str) -> int:
    return len("\n".join(body_lines(text)))


def entries(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in body_lines(text):
        m = _LINE.match(line)
        if m:
            out[m.group(1).strip().lower()] = m.group(2).strip()
    return out


def set_line(text: str, key: str, value: str) -> str:
    new = f"- {key}: {' '.join(value.split())}"
    lines = text.splitlines() if text else [HEADER]
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if m and m.group(1).strip().lower() == key.lower():
            lines[i] = new
            return "\n".join(lines) + "\n"
    return "\n".join([*lines, new]) + "\n"


def remove_line(text: str, key: str) -> str | None:
    lines = text.splitlines()
    kept = [
        ln
        for ln in lines
        if not ((m := _LINE.match(ln)) and m.group(1).strip().lower() == key.lower())
    ]
    return None if len(kept) == len(lines) else "\n".join(kept) + "\n"


DISK_FULL = "Not saved: the disk is full; nothing was saved. Reading still works."
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _write(dirs: TenantDirs, text: str) -> None:
    """Replace USER.md atomically; a full disk is a ProfileError (the old file stays)."""
    try:
        write_text(dirs.user_md, text)
    except OSError as exc:
        if exc.errno in _FULL:
            raise ProfileError(DISK_FULL) from None
        raise


def not_utf8(dirs: TenantDirs, exc: UnicodeDecodeError) -> str:
    """Why a hand-edited USER.md cannot be used, and how to mend it: a retry never would."""
    where = f"tenants/{dirs.tenant}/global/{dirs.user_md.name}"
    bad = exc.object[exc.start : exc.start + 1].hex()
    line = exc.object.count(b"\n", 0, exc.start) + 1
    return (
        f"Your profile file {dirs.user_md.name} ({where} in roost's home) is not UTF-8 "
        f"text: byte 0x{bad} at position {exc.start:,} (line {line:,}) cannot be read. "
        "Nothing was changed. Save the file as UTF-8 (or remove that byte, or the file), "
        "then try again."
    )


class Profile:
    def __init__(self, cap: int, audit: AuditSink, locks: TenantLocks | None = None) -> None:
        self.cap = cap
        self._audit = audit
        self._locks = locks or TenantLocks()

    def read(self, dirs: TenantDirs) -> str:
        """USER.md's text ("" when there is none); ProfileError when it is not UTF-8."""
        try:
            return dirs.user_md.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""
        except UnicodeDecodeError as exc:
            raise ProfileError(not_utf8(dirs, exc)) from None

    async def set(self, dirs: TenantDirs, key: str, value: str) -> int:
        key = key.strip()
        if not KEY.fullmatch(key):
            raise ProfileError(
                "A key is one word or short phrase (letters, digits, _ . -), at most 32 characters."
            )
        if not value.strip():
            raise ProfileError("Give a value: /profile set <key> <value>.")
        reasons = screen(f"{key}\n{value}")
        if reasons:
            raise ProfileError(refusal("this profile line", reasons))
        key, value = clean(key), clean(value)  # stored as NFKC
        if key.lower() == ZONE_KEY:
            value = check_zone(value)
        async with self._locks.hold(dirs.root, "profile"):
            with file_lock(dirs.root / ".profile.lock"):
                new = set_line(self.read(dirs), key, value)
                used = body_chars(new)
                if used > self.cap:
                    raise ProfileError(
                        f"Not saved: the profile would be {used:,} characters; the cap is "
                        f"{self.cap:,}. Remove or shorten a line first (/profile rm <key>)."
                    )
                _write(dirs, new)
        await self._audit.emit(
            "profile.changed",
            dirs.tenant,
            {"field": key, "op": "set", "chars": len(value), "profile_chars": used},
        )
        return used

    async def remove(self, dirs: TenantDirs, key: str) -> bool:
        async with self._locks.hold(dirs.root, "profile"):
            with file_lock(dirs.root / ".profile.lock"):
                new = remove_line(self.read(dirs), key.strip())
                if new is None:
                    return False
                _write(dirs, new)
        await self._audit.emit(
            "profile.changed",
            dirs.tenant,
            {"field": key.strip(), "op": "rm", "profile_chars": body_chars(new)},
        )
        return True

"""The person's time zone: one rule, used by commands, the model's tool and the prompt.

Order: the profile's `timezone` line (USER.md `- timezone: Europe/Berlin`),
else the operator's `[schedule] timezone`, else the host's zone (both folded
into the `default` passed in: `ScheduleService.default_tz`). A profile line
that names no known zone (edited by hand) is skipped, never an error.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.loadout.profile import ZONE_KEY, entries, known_zone
from bridge.types.tenant_dirs import TenantDirs


def person_zone(profile_lines: Iterable[str], default: str) -> str:
    """The zone name for a person whose profile body is `profile_lines`."""
    wanted = entries("\n".join(profile_lines)).get(ZONE_KEY, "")
    return wanted if known_zone(wanted) else default


def tenant_zone(dirs: TenantDirs, default: str) -> str:
    """`person_zone` of the tenant's USER.md as it is on disk now."""
    try:
        text = dirs.user_md.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        text = ""
    return person_zone(text.splitlines(), default)

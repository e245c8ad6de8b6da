"""Whether a chat platform is configured, and if not, what is missing: one line to show.

A channel is on when all the keys it needs are set (`[telegram] token`;
`[whatsapp]`'s and `[matrix]`'s `*_NEEDS`). One that is off used to be off in
silence: `roost send --to telegram:ID` queued a message nothing would ever
deliver, and a `[whatsapp]` section with a token but no phone number id left
WhatsApp off without a word. `off_reason` says why a channel cannot deliver
(`roost send --to` refuses with it); `half_configured` names each channel whose
section is partly written (`roost serve` prints one line each at start, `roost
doctor` fails it). Only the settings are read: nothing of a channel is imported.

The daemon may hold a secret the operator's shell does not (a systemd credential,
`roost.env`): `roost serve` writes the channels it started to `$ROOST_HOME/channels`
(`record_served`), and `roost send --to` refuses only a channel that neither its own
settings nor the last start (`last_served`) have.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bridge.core.atomic import write_text
from bridge.core.config import Settings
from bridge.core.config_sections import MATRIX_NEEDS, WHATSAPP_NEEDS


def _keys(section: str, keys: tuple[str, ...]) -> str:
    """`[whatsapp] app_secret and phone_number_id (ROOST_WHATSAPP__APP_SECRET, ...)`."""
    return f"[{section}] {_names(section, keys)}"


def _names(section: str, keys: tuple[str, ...]) -> str:
    """`app_secret and phone_number_id (ROOST_WHATSAPP__APP_SECRET, ...)`."""
    named = " and ".join(", ".join(keys).rsplit(", ", 1))
    env = ", ".join(f"ROOST_{section.upper()}__{key.upper()}" for key in keys)
    return f"{named} ({env})"


def missing_of(settings: Settings, channel: str) -> tuple[str, ...] | None:
    """The keys `channel` needs that are unset (empty: it is on); None for a channel that
    needs no key (the web page, on unless `web.enabled = false`)."""
    if channel == "telegram":
        return () if settings.telegram.token is not None else ("token",)
    if channel == "whatsapp":
        return settings.whatsapp.missing
    if channel == "matrix":
        return settings.matrix.missing
    return None


def off_reason(settings: Settings, channel: str) -> str | None:
    """Why `channel` cannot deliver a message with these settings, or None when it is on."""
    if channel == "web":
        return None if settings.web.enabled else "the web page is off (web.enabled = false)"
    missing = missing_of(settings, channel)
    if not missing:
        return None
    return f"{channel} is not configured: set {_keys(channel, missing)}"


def half_configured(settings: Settings) -> list[tuple[str, str]]:
    """(channel, what is missing) for each channel with some of its keys set but not all."""
    found = []
    for channel, needs in (("whatsapp", WHATSAPP_NEEDS), ("matrix", MATRIX_NEEDS)):
        missing = missing_of(settings, channel)
        if missing and len(missing) < len(needs):
            found.append((channel, f"[{channel}] is missing {_names(channel, missing)}"))
    return found


SERVED = "channels"  # in the home: the channels the last `roost serve` started, one a line


def record_served(home: Path, channels: Iterable[str]) -> None:
    """Keep the names of the channels this start made (mode 0600, replaced atomically)."""
    write_text(home / SERVED, "".join(f"{name}\n" for name in sorted(channels)))


def last_served(home: Path) -> frozenset[str]:
    """The channels the last `roost serve` of this home started (none: never, or unreadable)."""
    try:
        return frozenset((home / SERVED).read_text("utf-8").split())
    except (OSError, UnicodeDecodeError):
        return frozenset()

"""A chat platform's declaration: what shared code may know of a channel.

Each channel declares one `Platform` in its own package (a small module, e.g.
`bridge/channels/whatsapp/platform.py`), and its row in the channel table
(`bridge/app/channels_up.py`) names it. Shared code reads the declarations
through `Platforms`, the registry the composition root builds from the
table, and never spells a platform's name:

- the audit schema's `channel` enum, and the identity and message-id
  patterns it keeps (`bridge.audit.schema.schemas_for`);
- how people are written in `[tenants.NAME]` (`ids_key`, e.g.
  `whatsapp_ids = ["4915112345678"]`) and how one entry is read
  (`parse_id`), for the config check and the tenant resolver
  (`bridge.core.identities`);
- the `roost send --to` address (`address`, `parse_address`) and whose
  tenant a message to that chat belongs to (`identity_of_chat`);
- limits (`max_chars`, `download_bytes`) and what the channel can do
  (`Abilities`: voice out, files out, buttons, streaming by edits);
- the base prompt's row for the channel (`style`, block 1).

Imports nothing from the project.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

NAME = re.compile(r"^[a-z][a-z0-9]{1,23}$")
IDS_KEY = re.compile(r"^[a-z][a-z0-9]{1,23}_ids$")
MAX_CONFIG_ID = 256


@dataclass(frozen=True, slots=True)
class Abilities:
    """What a channel can send besides text."""

    voice: bool = False  # voice messages (a spoken answer, `/voice on`)
    files: bool = False  # files a reply hands out (`Final.files`)
    buttons: bool = False  # one-tap actions as buttons (`Final.actions`)
    edits: bool = False  # streams an answer by editing one message


def _digits_or_text(value: object) -> str | None:
    """A configured identity as text: an int, or a string without surrounding space."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= MAX_CONFIG_ID:
        return value.strip()
    return None


@dataclass(frozen=True, slots=True)
class Platform:
    """One chat platform, as every shared part of roost sees it."""

    name: str  # `Inbound.channel`; the audit schema's channel value
    title: str  # as people call it: "WhatsApp"
    style: str  # block 1's line for this channel: how to format answers
    identity: re.Pattern[str]  # an identity as the channel writes it (audit, config)
    msg_id: re.Pattern[str] | None = None  # the platform's message ids the audit may keep
    ids_key: str | None = None  # `[tenants.NAME] <ids_key> = [...]`; None: none in config
    address: str | None = None  # the `roost send --to` form shown in help, "whatsapp:<phone>"
    # the part of a `--to` value after "<name>:" ('' when bare) -> the chat, or None
    parse_address: Callable[[str], str | None] | None = None
    # a `send --to` chat -> the identity whose configured tenant the message is filed under
    identity_of_chat: Callable[[str], str | None] = lambda chat: None
    # a configured identity (TOML int or string) -> the identity as the channel writes it
    normalize_id: Callable[[object], str | None] = _digits_or_text
    max_chars: int = 0  # one message's text, as the platform counts it (0: no limit)
    download_bytes: int = 0  # what the bot may fetch from the platform (0: roost's own limit)
    abilities: Abilities = field(default_factory=Abilities)
    loopback: bool = False  # this machine's person (web page, terminal): the local tenant

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(f"platform name {self.name!r}: 2-24 of a-z, 0-9, a letter first")
        if self.ids_key is not None and self.ids_key != f"{self.name}_ids":
            raise ValueError(f"platform {self.name}: ids_key must be {self.name}_ids")

    def parse_id(self, value: object) -> str | None:
        """A configured identity, normalized; None when it is not one of this platform's."""
        text = self.normalize_id(value)
        return text if text is not None and self.identity.fullmatch(text) else None

    def target(self, rest: str | None) -> str | None:
        """The chat a `--to` value names (`rest`: after "<name>:", None when bare)."""
        if self.parse_address is None:
            return None
        return self.parse_address(rest if rest is not None else "")


class Platforms:
    """Every platform a roost knows, by name (the registry shared code reads)."""

    def __init__(self, platforms: Iterable[Platform]) -> None:
        self._by_name: dict[str, Platform] = {}
        for platform in platforms:
            known = self._by_name.get(platform.name)
            if known is not None and known is not platform:
                raise ValueError(f"two platforms are named {platform.name!r}")
            self._by_name[platform.name] = platform

    def __iter__(self) -> Iterator[Platform]:
        return iter(self._by_name.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Platform | None:
        return self._by_name.get(name)

    def with_(self, *more: Platform) -> Platforms:
        """This registry and `more` (a test's toy platform)."""
        return Platforms((*self, *more))

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def loopback(self) -> frozenset[str]:
        """Channels of this machine's person: they belong to the local tenant."""
        return frozenset(p.name for p in self if p.loopback)

    def with_ids(self) -> dict[str, Platform]:
        """`ids_key` -> platform, for the platforms whose people are listed in config."""
        return {p.ids_key: p for p in self if p.ids_key is not None}

    def styles(self) -> dict[str, str]:
        return {p.name: p.style for p in self}

    def download_limits(self) -> dict[str, int]:
        return {p.name: p.download_bytes for p in self if p.download_bytes}

    def able(self, ability: str) -> frozenset[str]:
        """The channels whose `Abilities` has `ability` on (e.g. "voice")."""
        return frozenset(p.name for p in self if getattr(p.abilities, ability))

    def titles(self, names: Iterable[str]) -> list[str]:
        return [p.title for p in self if p.name in set(names)]

    def addresses(self) -> list[str]:
        """The `--to` forms, for help and error messages."""
        return [p.address for p in self if p.address is not None]

    def target(self, text: str) -> tuple[str, str] | None:
        """(channel, chat) a `roost send --to` value names; None when malformed."""
        name, colon, rest = text.partition(":")
        platform = self._by_name.get(name)
        if platform is None:
            return None
        chat = platform.target(rest if colon else None)
        return (platform.name, chat) if chat is not None else None

"""Secrets from systemd credentials: `$CREDENTIALS_DIRECTORY/<name>` as settings.

A unit with `LoadCredential=telegram-token:/etc/roost/credentials/telegram-token`
hands roost the file in a private directory named by `$CREDENTIALS_DIRECTORY`.
`CREDENTIALS` maps each credential name to the setting it fills;
`CredentialSource` is the settings source that reads them (after the
environment, before the TOML file). An absent or empty file fills nothing.
The audit HMAC key (`audit-hmac-key`) is read by `bridge.audit.keys` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

CREDENTIALS: tuple[tuple[str, str, str], ...] = (
    ("telegram-token", "telegram", "token"),
    ("llm-api-key", "llm", "api_key"),
)
"""(credential name, settings section, key) for every secret a credential can carry."""


def read_credentials(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The settings the credential files carry, as nested sections (empty without the dir)."""
    where = env.get("CREDENTIALS_DIRECTORY")
    found: dict[str, dict[str, str]] = {}
    if not where:
        return found
    for name, section, key in CREDENTIALS:
        path = Path(where) / name
        try:
            value = path.read_text().strip()
        except (FileNotFoundError, NotADirectoryError):
            continue
        if value:
            found.setdefault(section, {})[key] = value
    return found


class CredentialSource(PydanticBaseSettingsSource):
    """A settings source over `read_credentials`."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self._values = read_credentials(env)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self._values.get(field_name), field_name, True

    def __call__(self) -> dict[str, Any]:
        return dict(self._values)

"""Personas: `personas/*.json` files, validated with pydantic, chosen per chat.

A persona has a name, a one-line description and `append_system` (block 5
of the prompt). The shipped directory comes first; an operator directory
(`$ROOST_HOME/personas`) may add personas or replace shipped ones by name.
Files that do not validate are skipped and reported by `problems`. Listings
are re-read only when a directory changed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge.core.filecache import FileCache

log = logging.getLogger(__name__)
DEFAULT = "default"
SHIPPED = Path(__file__).resolve().parents[2] / "personas"


class Persona(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")
    description: str = Field(min_length=1, max_length=200)
    append_system: str = Field(default="", max_length=8_000)


class Personas:
    def __init__(self, dirs: Sequence[Path], cache: FileCache | None = None) -> None:
        self._dirs = tuple(dirs)
        self._cache = cache or FileCache()
        self._key: object = None
        self._loaded: dict[str, Persona] = {}
        self.problems: list[str] = []

    @property
    def dirs(self) -> tuple[Path, ...]:
        """Where personas are read from now (a reload may change it)."""
        return self._dirs

    @property
    def files(self) -> FileCache:
        """The cache every persona file is read through."""
        return self._cache

    def set_dirs(self, dirs: Sequence[Path]) -> None:
        """Read personas from `dirs` from now on (a configuration reload)."""
        self._dirs = tuple(dirs)

    def all(self) -> dict[str, Persona]:
        key = tuple(
            (f, self._cache.read(d / f))
            for d in self._dirs
            for f in self._cache.listdir(d)
            if f.endswith(".json")
        )
        if key != self._key:
            self._loaded, self.problems = _parse(key)
            self._key = key
        return self._loaded

    def get(self, name: str | None) -> Persona | None:
        table = self.all()
        return table.get(name or DEFAULT) or table.get(DEFAULT)


def _parse(files: tuple[tuple[str, str | None], ...]) -> tuple[dict[str, Persona], list[str]]:
    out: dict[str, Persona] = {}
    problems = []
    for filename, text in files:
        if text is None:
            continue
        try:
            persona = Persona.model_validate(json.loads(text))
        except (ValueError, ValidationError) as exc:
            first = str(exc).splitlines()[0]
            problems.append(f"{filename}: {first}")
            log.warning("persona file %s skipped: %s", filename, first)
            continue
        if persona.name + ".json" != filename:
            problems.append(f"{filename}: the name inside is {persona.name!r}")
            continue
        out[persona.name] = persona
    return out, problems

"""The tool library: session tools (per chat, in memory) and saved `me.*` tools on disk.

Saved tools live in one directory (the tenant's `forge/tools/`):

    me.<name>.py      the source, exactly as linted
    me.<name>.json    its metadata (forge.toolmeta; written last: the commit marker)
    usage.sqlite      calls, errors, last use (forge.usage)

Every write is atomic. `load_verified` re-hashes the source before a run and
refuses a tool whose file no longer matches its recorded SHA-256. Nothing is
ever deleted automatically. This module does not import bridge.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.atomic import private_dir, remove_orphan_temps, write_atomic
from forge.findings import Finding
from forge.lint import lint
from forge.lint_text import escape_hidden
from forge.names import BadName, bare_name, check_name, qualified
from forge.policy.compile import CompileFailed, compile_tool
from forge.schema import ToolFormatError, describe_tool
from forge.toolmeta import BadMeta, ToolMeta, dumps, loads, name_of
from forge.usage import Usage, UsageStore

UNUSED_DAYS = 90
_DAY_MS = 86_400_000


class ToolExists(Exception):
    """Saving would overwrite a tool; pass replace=True."""


class ToolNotFound(KeyError):
    pass


class IntegrityError(Exception):
    """A saved tool's source no longer matches its recorded hash."""


def sha256_text(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A linted, compiled tool (session scope): bare name, no `me.` prefix."""

    name: str
    description: str
    source: str
    schema: dict[str, Any]
    secrets: tuple[str, ...]
    sha256: str
    network: tuple[str, ...] = ()  # NETWORK as declared: part of the source, so of the hash


@dataclass(frozen=True, slots=True)
class SavedTool:
    spec: ToolSpec
    created_ms: int
    saved_from: str
    usage: Usage = field(default_factory=Usage)

    @property
    def qualified_name(self) -> str:
        return qualified(self.spec.name)

    def unused(self, now_ms: int, days: int = UNUSED_DAYS) -> bool:
        """True when not used for `days` (counting from creation if never used)."""
        since = self.usage.last_used_ms or self.created_ms
        return now_ms - since >= days * _DAY_MS


@dataclass(frozen=True, slots=True)
class CreateResult:
    tool: ToolSpec | None
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return self.tool is not None


MAX_DESCRIPTION = 300  # characters: one line, shown in every prompt's tool list


def build_spec(name: str, description: str, source: str) -> CreateResult:
    """Lint, check the format, and compile; findings go back to the model. The
    description (or else the docstring's first line) is one line of at most
    MAX_DESCRIPTION characters: every turn's tool list and the consent prompt show it."""
    try:
        check_name(name)
    except BadName as exc:
        return CreateResult(None, (Finding(1, 0, "N001", str(exc)),))
    findings = lint(source)
    if findings:
        return CreateResult(None, tuple(findings))
    try:
        info = describe_tool(source)
        compile_tool(source)
    except ToolFormatError as exc:
        return CreateResult(None, tuple(exc.findings))
    except CompileFailed as exc:
        return CreateResult(None, tuple(exc.findings))
    desc = escape_hidden(" ".join(description.split())) or info.description
    if len(desc) > MAX_DESCRIPTION:
        said = "the description" if description.strip() else "run()'s docstring's first line"
        return CreateResult(
            None,
            (
                Finding(
                    1,
                    0,
                    "N002",
                    f"{said} has {len(desc)} characters; keep it to one line of at most "
                    f"{MAX_DESCRIPTION} saying what the tool does (details go in the docstring)",
                ),
            ),
        )
    spec = ToolSpec(
        name, desc, source, info.schema, info.secrets, sha256_text(source), info.network
    )
    return CreateResult(spec)


class SessionTools:
    """Tools created during chats, kept in memory per chat key until saved or dropped."""

    def __init__(self) -> None:
        self._by_chat: dict[str, dict[str, ToolSpec]] = {}

    def create(self, chat_key: str, name: str, description: str, source: str) -> CreateResult:
        result = build_spec(name, description, source)
        if result.tool is not None:
            self._by_chat.setdefault(chat_key, {})[name] = result.tool
        return result

    def get(self, chat_key: str, name: str) -> ToolSpec | None:
        return self._by_chat.get(chat_key, {}).get(name)

    def list(self, chat_key: str) -> list[ToolSpec]:
        return sorted(self._by_chat.get(chat_key, {}).values(), key=lambda t: t.name)

    def drop(self, chat_key: str) -> None:
        self._by_chat.pop(chat_key, None)


class ToolLibrary:
    """Saved personal tools in one directory (a tenant's `forge/tools`)."""

    def __init__(self, directory: Path, clock_ms: Callable[[], int]) -> None:
        self.directory = directory
        self.clock_ms = clock_ms
        self.usage = UsageStore(directory)

    def _paths(self, name: str) -> tuple[Path, Path]:
        base = f"me.{bare_name(name)}"
        return self.directory / f"{base}.py", self.directory / f"{base}.json"

    def prepare(self) -> None:
        private_dir(self.directory)
        remove_orphan_temps(self.directory)

    def save(
        self,
        spec: ToolSpec,
        *,
        alias: str | None = None,
        saved_from: str = "",
        replace: bool = False,
        created_ms: int | None = None,
    ) -> SavedTool:
        """Copy a session tool to `me.<alias or name>`; raises ToolExists unless replace.
        `created_ms`: when it was first saved (a removed tool brought back); default now."""
        name = check_name(alias or spec.name)
        private_dir(self.directory)
        py, meta_file = self._paths(name)
        if meta_file.exists() and not replace:
            raise ToolExists(f"me.{name} exists; save with --replace to overwrite it")
        digest = sha256_text(spec.source)
        meta = ToolMeta(
            name,
            spec.description,
            spec.schema,
            spec.secrets,
            digest,
            self.clock_ms() if created_ms is None else created_ms,
            saved_from,
        )
        write_atomic(py, spec.source.encode("utf-8"))
        write_atomic(meta_file, dumps(meta))
        return _saved(meta, spec.source, self.usage.get(name))

    def _load(self, name: str, usage: Usage | None = None) -> SavedTool:
        py, meta_file = self._paths(name)
        try:
            meta = loads(meta_file.read_bytes(), bare_name(name))
            source = py.read_text("utf-8")
        except FileNotFoundError:
            raise ToolNotFound(f"no personal tool me.{bare_name(name)}") from None
        return _saved(meta, source, usage if usage is not None else self.usage.get(meta.name))

    def show(self, name: str) -> SavedTool:
        """The tool with its usage (source as on disk; see `load_verified`)."""
        return self._load(name)

    def list(self) -> list[SavedTool]:
        if not self.directory.is_dir():
            return []
        usage = self.usage.all()
        out = []
        for path in sorted(self.directory.glob("me.*.json")):
            name = name_of(path.name)
            if name is None:
                continue
            try:
                out.append(self._load(name, usage.get(name, Usage())))
            except (ToolNotFound, BadMeta, UnicodeDecodeError):
                continue
        return out

    def remove(self, name: str) -> bool:
        py, meta = self._paths(name)
        existed = meta.exists() or py.exists()
        for path in (meta, py):
            path.unlink(missing_ok=True)
        self.usage.forget(bare_name(name))
        return existed

    def load_verified(self, name: str) -> SavedTool:
        """Load a tool for a run; raises IntegrityError if the source was altered."""
        tool = self._load(name)
        actual = sha256_text(tool.spec.source)
        if actual != tool.spec.sha256:
            raise IntegrityError(
                f"me.{tool.spec.name}: source hash {actual[:12]} does not "
                f"match the saved {tool.spec.sha256[:12]}; not running it"
            )
        return tool

    def record_use(self, name: str, ok: bool) -> None:
        self.usage.record(bare_name(name), ok, self.clock_ms())


def _saved(meta: ToolMeta, source: str, usage: Usage) -> SavedTool:
    spec = ToolSpec(
        meta.name,
        meta.description,
        source,
        meta.schema,
        meta.secrets,
        meta.sha256,
        _declared_hosts(source),
    )
    return SavedTool(spec, meta.created_ms, meta.saved_from, usage)


def _declared_hosts(source: str) -> tuple[str, ...]:
    """NETWORK of a saved source (shown by /tool show); () when it no longer parses."""
    try:
        return describe_tool(source).network
    except ToolFormatError:
        return ()

"""Configuration: a TOML file plus `ROOST_*` environment variables.

The file is `$ROOST_CONFIG`, else `~/.config/roost/roost.toml` (optional).
Environment variables win over the file and nest with `__`
(`ROOST_LLM__BASE_URL`); systemd credentials (`bridge.core.credentials`)
sit between the two. Invalid configuration raises `ConfigError` whose
message names the key and the reason; the CLI turns it into exit status 78.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bridge.core.credentials import CredentialSource
from bridge.types.tenant_dirs import check_tenant_id

EX_CONFIG = 78
DEFAULT_MODEL = "default"
MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


class ConfigError(Exception):
    """Configuration that cannot be used; the message names key and reason."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMSettings(_Section):
    provider: Literal["auto", "openai", "anthropic", "claude_cli", "offline"] = "auto"
    name: str = DEFAULT_MODEL  # [llm]: the default model's name; [models.X]: X
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(120.0, gt=0)  # inactivity: fail after this long without a byte
    max_output_tokens: int = Field(4096, ge=1, le=1_000_000)  # anthropic: max_tokens
    claude_path: str = "claude"  # claude_cli: the Claude Code executable
    max_retries: int = Field(3, ge=0, le=10)
    max_steps: int = Field(8, ge=1, le=50)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


HOST_ENTRY = re.compile(r"^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(:\d{1,5})?$")


class WebSettings(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)
    token: SecretStr | None = None
    # Host header values served besides loopback names (DNS-rebinding guard):
    # "name" (bare or with the listening port) or "name:port" (exactly).
    allowed_hosts: list[str] = Field(default_factory=list)
    # GET /metrics (Prometheus text, bearer token): off unless the operator turns it on
    metrics: bool = False

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, v: list[str]) -> list[str]:
        for entry in v:
            if not HOST_ENTRY.fullmatch(entry.lower()):
                raise ValueError(f"{entry!r} is not a host name or host:port")
        return [entry.lower() for entry in v]


class TelegramSettings(_Section):
    token: SecretStr | None = None
    api_base_url: str = "https://api.telegram.org/bot"
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    allowed_groups: list[int] = Field(default_factory=list)
    audience: str | None = None
    start_attempts: int = Field(5, ge=1, le=20)  # getMe tries at start-up (network errors)

    @field_validator("api_base_url")
    @classmethod
    def _bot_url(cls, v: str) -> str:
        # python-telegram-bot appends the token: ".../bot" + token + "/getMe"
        if not re.fullmatch(r"https?://[^\s?#]+/bot", v):
            raise ValueError(
                "must be an http(s) URL ending in /bot (the token is appended), "
                "e.g. https://api.telegram.org/bot"
            )
        return v


class LimitSettings(_Section):
    max_message_chars: int = Field(16_000, ge=1)
    session_chars: int = Field(32_000, ge=1_000)
    session_idle_days: float = Field(7.0, gt=0)
    shutdown_grace_s: float = Field(10.0, ge=0)
    max_reply_chars: int = Field(32_000, ge=100)  # a longer model reply is cut visibly
    # token budgets per tenant (in + out, UTC day / month); None: no budget
    daily_tokens: int | None = Field(None, ge=1)
    monthly_tokens: int | None = Field(None, ge=1)


class LoadoutSettings(_Section):
    """Caps of the loadout (characters); see bridge/loadout."""

    memory_chars: int = Field(2_200, ge=200)
    topic_chars: int = Field(6_000, ge=200)
    profile_chars: int = Field(1_375, ge=100)
    steering_file_chars: int = Field(45_000, ge=0)
    audience_chars: int = Field(400, ge=20)
    personas_dir: Path | None = None


class ScheduleSettings(_Section):
    """Reminders and recurring jobs (bridge/schedule)."""

    timezone: str | None = None  # IANA name; default: the host's zone
    max_jobs: int = Field(50, ge=1)  # per tenant, active and paused
    min_interval_minutes: int = Field(5, ge=1)  # between two runs of a recurring job

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"unknown time zone {v!r} (an IANA name such as Europe/Berlin)"
            ) from exc
        return v


class ForgeSettings(_Section):
    """The network broker of personal tools (forge.broker)."""

    # "host" or "host:port" a tool may reach over plain http and at private,
    # loopback or link-local addresses (e.g. "127.0.0.1:8080", "homeassistant.local").
    private_hosts: list[str] = Field(default_factory=list)
    net_requests_per_minute: int = Field(60, ge=1)  # per tenant, all its tools together

    @field_validator("private_hosts")
    @classmethod
    def _hosts(cls, v: list[str]) -> list[str]:
        from forge.net_rules import parse_host

        for entry in v:
            if parse_host(entry) is None:
                raise ValueError(f"not a host or host:port: {entry!r}")
        return v


MCP_SERVER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,23}$")


class McpServerSettings(_Section):
    """An external MCP server attached to one tenant (`[tenants.T.mcp.NAME]`, bridge/mcp).

    Exactly one of `command` (stdio: argv, plus `env`) or `url` (streamable
    HTTP, plus `headers`); `allow` names the server's tools the model may
    call (empty: none; `["*"]`: every tool it lists, a risk: see docs/security.md).
    """

    command: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    allow: list[str] = Field(default_factory=list)
    timeout_s: float = Field(20.0, gt=0, le=600)  # start, list and each call

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("must start with https:// (or http:// for a local server)")
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if bool(self.command) == (self.url is not None):
            raise ValueError('give either command = [...] (stdio) or url = "https://..."')
        if self.env and not self.command:
            raise ValueError("env goes with command (a stdio server)")
        if self.headers and self.url is None:
            raise ValueError("headers go with url (an HTTP server)")
        return self


class TenantRule(_Section):
    telegram_ids: list[int] = Field(default_factory=list)
    # token budgets (in + out); None: the [limits] default; 0: no budget for this tenant
    daily_tokens: int | None = Field(None, ge=0)
    monthly_tokens: int | None = Field(None, ge=0)
    mcp: dict[str, McpServerSettings] = Field(default_factory=dict)  # external MCP servers

    @field_validator("mcp")
    @classmethod
    def _mcp_names(cls, v: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in v:
            if not MCP_SERVER_NAME.fullmatch(name):
                raise ValueError(
                    f"MCP server name {name!r}: 1-24 of a-z, 0-9, '-', '_' (no '__'), "
                    "starting with a letter or digit"
                )
        return v


class StyleSettings(_Section):
    """The user-style learner (bridge/style)."""

    judge_model: str | None = None  # a model name ([llm] name or a [models.X]); None: default


def default_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "roost"


class Settings(BaseSettings):
    """Everything roost reads at start-up. Sections mirror the TOML tables."""

    model_config = SettingsConfigDict(
        env_prefix="ROOST_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    home: Path = Field(default_factory=default_home)
    local_tenant: str = "local"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"  # json: one object per line (ROOST_LOG_FORMAT)
    audit_hmac_key_file: Path | None = None
    llm: LLMSettings = Field(default_factory=LLMSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    loadout: LoadoutSettings = Field(default_factory=LoadoutSettings)
    schedule: ScheduleSettings = Field(default_factory=ScheduleSettings)
    forge: ForgeSettings = Field(default_factory=ForgeSettings)
    tenants: dict[str, TenantRule] = Field(default_factory=dict)
    models: dict[str, LLMSettings] = Field(default_factory=dict)  # named models, /model
    style: StyleSettings = Field(default_factory=StyleSettings)

    @model_validator(mode="after")
    def _models(self) -> Settings:
        check_models(self)
        return self

    @field_validator("local_tenant")
    @classmethod
    def _local(cls, v: str) -> str:
        return check_tenant_id(v)

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, v: dict[str, TenantRule]) -> dict[str, TenantRule]:
        seen: dict[int, str] = {}
        for tid, rule in v.items():
            check_tenant_id(tid)
            for uid in rule.telegram_ids:
                if uid in seen:
                    raise ValueError(f"telegram id {uid} is mapped to {seen[uid]!r} and {tid!r}")
                seen[uid] = tid
        return v

    @field_validator("home")
    @classmethod
    def _home(cls, v: Path) -> Path:
        return v.expanduser().absolute()


def config_path(env: Mapping[str, str]) -> tuple[Path, bool]:
    """The TOML file to read and whether it was named explicitly."""
    named = env.get("ROOST_CONFIG")
    if named:
        return Path(named).expanduser(), True
    return Path.home() / ".config" / "roost" / "roost.toml", False


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        env = "ROOST_" + "__".join(str(p).upper() for p in e["loc"])
        reason = e["msg"]
        if e["type"] == "extra_forbidden":
            reason = "unknown setting"
        lines.append(f"  {key}: {reason}  [file key {key!r} or env {env}]")
    return "\n".join(lines)


def _blank(value: str | SecretStr | None) -> bool:
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    return not (text or "").strip()


def check_llm(llm: LLMSettings) -> None:
    """The rules of `bridge.llm.select` that need no code of it: raise ConfigError, one line.

    `openai` forced needs a server: `llm.base_url`, or `llm.api_key` alone for
    api.openai.com. Whenever openai is chosen (forced, or `auto` with a URL or
    a key), `llm.model` must name a model.
    """
    no_url, no_key = _blank(llm.base_url), _blank(llm.api_key)
    if llm.provider == "openai" and no_url and no_key:
        raise ConfigError(
            "invalid configuration: llm.base_url: ROOST_LLM__PROVIDER is openai but no server "
            "is set; set llm.base_url (ROOST_LLM__BASE_URL), an OpenAI-compatible base such as "
            "http://127.0.0.1:11434/v1, or llm.api_key (ROOST_LLM__API_KEY) for api.openai.com"
        )
    uses_openai = llm.provider == "openai" or (llm.provider == "auto" and not (no_url and no_key))
    if uses_openai and not llm.model.strip():
        raise ConfigError(
            "invalid configuration: llm.model: empty; set llm.model (ROOST_LLM__MODEL) "
            "to the model the server should run"
        )


def check_models(settings: Settings) -> None:
    """Names of the named models: valid, unique, and the judge's model exists (ValueError)."""
    default = settings.llm.name
    if not MODEL_NAME.fullmatch(default):
        raise ValueError(f"llm.name {default!r}: use a-z, 0-9, _ and - (at most 32)")
    for name, model in settings.models.items():
        if not MODEL_NAME.fullmatch(name):
            raise ValueError(f"models.{name}: a model name is a-z, 0-9, _ and - (at most 32)")
        if name == default:
            raise ValueError(f"models.{name}: {name!r} is the name of the [llm] model")
        if model.name not in (DEFAULT_MODEL, name):
            raise ValueError(
                f"models.{name}.name: leave it out (the name is the table's, {name!r})"
            )
    judge = settings.style.judge_model
    if judge is not None and judge != default and judge not in settings.models:
        known = ", ".join([default, *settings.models])
        raise ValueError(f"style.judge_model {judge!r} is not a configured model ({known})")


def check_named_llms(settings: Settings) -> None:
    """`check_llm` for every [models.X] table; the message names that table."""
    for name, model in settings.models.items():
        try:
            check_llm(model)
        except ConfigError as exc:
            text = str(exc).replace("ROOST_LLM__", f"ROOST_MODELS__{name.upper()}__")
            raise ConfigError(text.replace(" llm.", f" models.{name}.")) from exc


def load_settings(**overrides: object) -> Settings:
    """Read the file and the environment; raise ConfigError naming key and reason.

    `overrides` (keyword arguments) win over both; tests and `roost` flags use them.
    """
    path, named = config_path(os.environ)
    if named and not path.is_file():
        raise ConfigError(f"invalid configuration: ROOST_CONFIG={path} does not exist")
    if path.is_file():
        try:
            with path.open("rb") as fh:
                tomllib.load(fh)
        except (tomllib.TOMLDecodeError, OSError) as exc:
            raise ConfigError(f"invalid configuration: cannot read {path}: {exc}") from exc

    class _Loaded(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            sources.append(CredentialSource(settings_cls, os.environ))
            if path.is_file():
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
            return tuple(sources)

    source = f"{path} and environment" if path.is_file() else "environment"
    try:
        loaded = _Loaded(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from exc
    check_llm(loaded.llm)
    check_named_llms(loaded)
    return Settings.model_construct(**{k: getattr(loaded, k) for k in Settings.model_fields})

"""Configuration: a TOML file plus `ROOST_*` environment variables.

The file is `$ROOST_CONFIG`, else `~/.config/roost/roost.toml` (optional); an
empty `ROOST_CONFIG` or `ROOST_HOME` counts as unset.
Environment variables win over the file and nest with `__`
(`ROOST_LLM__BASE_URL`); systemd credentials (`bridge.core.credentials`)
sit between the two. Invalid configuration raises `ConfigError` whose
message names the key and the reason; the CLI turns it into exit status 78.
A file that is not UTF-8 (or starts with a byte-order mark) or not TOML, or a
`ROOST_CONFIG` naming a directory, is a `ConfigError` of one line too (a bare word
where text belongs, `model = llama3.2`, is told to go in quotes). A misspelt key is
refused naming the nearest known one (`known_keys`, "did you mean llm.model?").
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from types import NoneType, UnionType
from typing import Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
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

from bridge.core.config_sections import (
    DEFAULT_MODEL,
    MODEL_NAME,
    ClusterSettings,
    DatabaseSettings,
    DefaultLLMSettings,
    ForgeSettings,
    GradingSettings,
    LimitSettings,
    LLMSettings,
    LoadoutSettings,
    MatrixSettings,
    MemorySettings,
    QuotaSettings,
    RecallSettings,
    ScheduleSettings,
    StyleSettings,
    TelegramSettings,
    TenantRule,
    WebSettings,
    WhatsAppSettings,
    did_you_mean,
    new,
)
from bridge.core.credentials import CredentialSource
from bridge.types.tenant_dirs import check_tenant_id

EX_CONFIG = 78


class ConfigError(Exception):
    """Configuration that cannot be used; the message names key and reason."""


def default_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "roost"


class Settings(BaseSettings):
    """Everything roost reads at start-up. Sections mirror the TOML tables."""

    # defer_build: its validator is made only when something validates a `Settings` (tests
    # do); `load_settings` validates a `_Loaded` and returns a `Settings` made without one,
    # so a `roost` process builds one settings validator (~5-10 ms of CPU each), not two
    model_config = SettingsConfigDict(
        env_prefix="ROOST_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        defer_build=True,
    )

    home: Path = Field(default_factory=default_home)
    local_tenant: str = "local"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["text", "json"] = "text"  # json: one object per line (ROOST_LOG_FORMAT)
    audit_hmac_key_file: Path | None = None
    llm: DefaultLLMSettings = Field(default_factory=new(DefaultLLMSettings))
    web: WebSettings = Field(default_factory=new(WebSettings))
    telegram: TelegramSettings = Field(default_factory=new(TelegramSettings))
    whatsapp: WhatsAppSettings = Field(default_factory=new(WhatsAppSettings))
    matrix: MatrixSettings = Field(default_factory=new(MatrixSettings))
    limits: LimitSettings = Field(default_factory=new(LimitSettings))
    loadout: LoadoutSettings = Field(default_factory=new(LoadoutSettings))
    schedule: ScheduleSettings = Field(default_factory=new(ScheduleSettings))
    forge: ForgeSettings = Field(default_factory=new(ForgeSettings))
    quota: QuotaSettings = Field(default_factory=new(QuotaSettings))
    tenants: dict[str, TenantRule] = Field(default_factory=dict)
    models: dict[str, LLMSettings] = Field(default_factory=dict)  # named models, /model
    style: StyleSettings = Field(default_factory=new(StyleSettings))
    grading: GradingSettings = Field(default_factory=new(GradingSettings))
    recall: RecallSettings = Field(default_factory=new(RecallSettings))
    memory: MemorySettings = Field(default_factory=new(MemorySettings))
    database: DatabaseSettings = Field(default_factory=new(DatabaseSettings))
    cluster: ClusterSettings = Field(default_factory=new(ClusterSettings))

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
        seen: dict[tuple[str, str], str] = {}
        for tid, rule in v.items():
            check_tenant_id(tid)
            # the same entry under two tenants; what each platform accepts and how it
            # normalizes is checked with the registry (bridge.core.identities)
            for key in rule.model_extra or {}:
                for value in rule.identities(key):
                    entry = (key, str(value).strip())
                    if seen.get(entry, tid) != tid:
                        name = key.removesuffix("_ids")
                        raise ValueError(
                            f"{name} id {entry[1]} is mapped to {seen[entry]!r} and {tid!r}"
                        )
                    seen[entry] = tid
        return v

    @field_validator("home", mode="before")
    @classmethod
    def _home_set(cls, v: object) -> object:
        # an empty `ROOST_HOME=` (or `home = ""`) is unset, as an empty `ROOST_CONFIG=`
        # is: Path("") would make the current directory the home
        if isinstance(v, str) and not v.strip():
            return default_home()
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


def config_source(env: Mapping[str, str]) -> str:
    """Where a process's configuration comes from, for the operator's eyes: the file, or
    the built-in defaults when there is none."""
    path, _ = config_path(env)
    try:
        found = path.is_file()
    except OSError:  # a folder this user may not look into (root's, read as the owner)
        return str(path)
    return str(path) if found else f"the built-in defaults (no {path})"


def _table_of(kind: object) -> object:
    """`kind` without `| None` (a table that may be left out is still that table)."""
    if get_origin(kind) in (Union, UnionType):
        kinds = [k for k in get_args(kind) if k is not NoneType]
        return kinds[0] if len(kinds) == 1 else kind
    return kind


def known_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the table at `loc` takes (`()`: the top level; `("models", "smart")`:
    a `[models.X]` table), or [] where `loc` names no table of `Settings`."""
    kind: object = Settings
    for part in loc:
        if get_origin(kind) is dict:  # [tenants.X], [models.X]: any name, one kind of table
            kind = _table_of(get_args(kind)[1])
            continue
        if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
            return []
        field = kind.model_fields.get(str(part))
        if field is None:
            return []
        kind = _table_of(field.annotation)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return list(kind.model_fields)
    return []


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        env = "ROOST_" + "__".join(str(p).upper() for p in e["loc"])
        reason = e["msg"]
        if e["type"] == "value_error":  # our own sentence, without pydantic's "Value error, "
            reason = str(e.get("ctx", {}).get("error", reason))
        if e["type"] == "extra_forbidden" and e["loc"]:
            table = e["loc"][:-1]
            prefix = "".join(f"{p}." for p in table)
            reason = "unknown setting" + did_you_mean(str(e["loc"][-1]), known_keys(table), prefix)
        lines.append(f"  {key}: {reason}  [file key {key!r} or env {env}]")
    return "\n".join(lines)


def _blank(value: str | SecretStr | None) -> bool:
    text = value.get_secret_value() if isinstance(value, SecretStr) else value
    return not (text or "").strip()


def check_llm(llm: LLMSettings) -> None:
    """The rules of `bridge.llm.select` that need no code of it: raise ConfigError, one line.

    `openai` forced needs a server: `llm.base_url`, or `llm.api_key` alone for
    api.openai.com. Whenever openai is chosen (forced, or `auto` with a URL or
    a key), `llm.model` must name a model. `anthropic` forced needs `llm.api_key`.
    """
    no_url, no_key = _blank(llm.base_url), _blank(llm.api_key)
    if llm.provider == "anthropic" and no_key:
        raise ConfigError(
            "invalid configuration: llm.api_key: ROOST_LLM__PROVIDER is anthropic but no key "
            "is set; put an Anthropic API key (sk-ant-...) in llm.api_key (ROOST_LLM__API_KEY)"
        )
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
    if uses_openai and not no_key and _has_login(llm.base_url):
        raise ConfigError(  # the HTTP client refuses both at every request
            "invalid configuration: llm.base_url: it holds a user name or password and "
            "llm.api_key is set too; a request carries only one of them: drop the login "
            "from the URL, or the key"
        )


def _has_login(url: str | None) -> bool:
    """Whether `url` holds a user name or password (`http://user:pw@host/`)."""
    try:
        parts = urlsplit((url or "").strip())
    except ValueError:
        return False
    return parts.username is not None or parts.password is not None


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
    grader = settings.grading.judge_model
    if grader is not None and grader != default and grader not in settings.models:
        known = ", ".join([default, *settings.models])
        raise ValueError(f"grading.judge_model {grader!r} is not a configured model ({known})")


def check_named_llms(settings: Settings) -> None:
    """`check_llm` for every [models.X] table; the message names that table."""
    for name, model in settings.models.items():
        try:
            check_llm(model)
        except ConfigError as exc:
            text = str(exc).replace("ROOST_LLM__", f"ROOST_MODELS__{name.upper()}__")
            raise ConfigError(text.replace(" llm.", f" models.{name}.")) from exc


def tenant_web_tokens(settings: Settings, web: str | None) -> dict[str, str]:
    """`[tenants.X] web_token` -> X; ConfigError when one is the web token `web` or another
    tenant's (every command checks the configured ones; `serve` again with a stored token)."""
    tokens: dict[str, str] = {}
    for tenant, rule in settings.tenants.items():
        if rule.web_token is None:
            continue
        token = rule.web_token.get_secret_value().strip()
        if token == web or token in tokens:
            raise ConfigError(
                f"invalid configuration: tenants.{tenant}.web_token: the same token is used twice"
            )
        tokens[token] = tenant
    return tokens


# The file `load_settings` is reading, for `_Loaded`'s sources: set around one
# validation (a context variable, so threads and tasks loading at once do not mix).
# The class is made once: making a pydantic settings class costs ~10 ms of CPU (built at
# its first validation: `defer_build`, inherited from `Settings`).
_READING: ContextVar[Path | None] = ContextVar("roost_config_file", default=None)


class _Loaded(Settings):
    """Settings read from the arguments, the environment, credentials and the file."""

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
        path = _READING.get()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


BOM = b"\xef\xbb\xbf"


def read_toml(path: Path) -> dict[str, object]:
    """The file parsed, or ConfigError in one line: unreadable, not UTF-8 (where the
    first bad byte is), a byte-order mark (TOML has none), or invalid TOML."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"invalid configuration: cannot read {path}: {exc.strerror}") from exc
    if data.startswith(BOM):
        raise ConfigError(
            f"invalid configuration: cannot read {path}: it starts with a byte-order mark "
            "(U+FEFF); save it as UTF-8 without one"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"invalid configuration: cannot read {path}: not UTF-8 text (byte "
            f"0x{data[exc.start]:02x} at line {line}, column {column}); save it as UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        hint = unquoted_hint(str(exc), text)
        raise ConfigError(f"invalid configuration: cannot read {path}: {exc}{hint}") from exc


_AT_LINE = re.compile(r"^Invalid value \(at line (\d+), column \d+\)$")
_BARE = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*=\s*[A-Za-z]")


def unquoted_hint(reason: str, text: str) -> str:
    """For tomllib's "Invalid value" at a `key = word` line (`model = llama3.2`, a URL
    without quotes): "; text goes in quotes: model = \"...\"" (the value is never shown:
    it may be a key); `True` gets TOML's lowercase `true`."""
    at = _AT_LINE.match(reason)
    lines = text.splitlines()
    if at is None or not 0 < int(at[1]) <= len(lines):
        return ""
    bare = _BARE.match(lines[int(at[1]) - 1])
    if bare is None:
        return ""
    value = lines[int(at[1]) - 1].partition("=")[2].partition("#")[0].strip()
    if value.lower() in ("true", "false"):  # True, FALSE
        return f"; TOML writes {value.lower()} in lowercase: {bare[1]} = {value.lower()}"
    if value.lower() in ("inf", "nan"):
        return ""
    return f'; text goes in quotes: {bare[1]} = "..."'


def misspelt_env(env: Mapping[str, str]) -> str | None:
    """The first `ROOST_SECTION_KEY` variable (one `_` after a section's name, where
    `ROOST_SECTION__KEY` was meant) in `env`, as a one-line reason; None if none.
    pydantic-settings reads only the `__` form and would ignore it without a word."""
    sections = {
        name.upper()
        for name, f in _Loaded.model_fields.items()
        if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)
    }
    for var in sorted(env):
        if not var.startswith("ROOST_") or "__" in var:
            continue
        rest = var.removeprefix("ROOST_")
        if rest.lower() in _Loaded.model_fields:
            continue  # a top-level setting (ROOST_HOME, ROOST_LOG_LEVEL, ...)
        section, _, key = rest.partition("_")
        if section in sections and key:
            return (
                f"invalid configuration: {var}: unknown setting; "
                f"a section's key takes two underscores: ROOST_{section}__{key}"
            )
    return None


def load_settings(**overrides: object) -> Settings:
    """Read the file and the environment; raise ConfigError naming key and reason.

    `overrides` (keyword arguments) win over both; tests and `roost` flags use them.
    """
    misspelt = misspelt_env(os.environ)
    if misspelt is not None:
        raise ConfigError(misspelt)
    path, named = config_path(os.environ)
    if named and path.is_dir():
        raise ConfigError(f"invalid configuration: ROOST_CONFIG={path} is a directory, not a file")
    if named and not path.is_file():
        raise ConfigError(f"invalid configuration: ROOST_CONFIG={path} does not exist")
    if path.is_file():
        read_toml(path)

    source = f"{path} and environment" if path.is_file() else "environment"
    reading = _READING.set(path if path.is_file() else None)
    try:
        loaded = _Loaded(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source)) from exc
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, OSError) as exc:  # changed meanwhile
        raise ConfigError(f"invalid configuration: cannot read {path}: {exc}") from exc
    finally:
        _READING.reset(reading)
    check_llm(loaded.llm)
    check_named_llms(loaded)
    web = loaded.web.token.get_secret_value() if loaded.web.token is not None else None
    tenant_web_tokens(loaded, web)
    return Settings.model_construct(**{k: getattr(loaded, k) for k in Settings.model_fields})

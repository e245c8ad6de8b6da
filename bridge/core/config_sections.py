"""The tables of the configuration file, one pydantic model each (`[llm]`, `[web]`, ...).

`bridge.core.config.Settings` puts them together and loads them; validators
here check one table at a time and name the key that is wrong.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from bridge.storage import url as db_url

_M = TypeVar("_M", bound=BaseModel)


# The defaults' factories are plain functions: pydantic asks each `default_factory` for
# its signature when it builds a model. A model class's signature is made from its fields
# (0.1-0.4 ms each), and the builtin `list`'s is parsed from its text with `tokenize`,
# whose pattern (built from a set: its order follows the hash seed) `bridge.regex_code`
# cannot keep: ~4 ms of CPU in every roost process.
def empty_list() -> list[Any]:
    """`default_factory` of a list setting: a new empty list."""
    return []


def new(model: type[_M]) -> Callable[[], _M]:
    """`default_factory` of a section: `model()`, a table with every default."""

    def made() -> _M:
        return model()

    return made


DEFAULT_MODEL = "default"
MODEL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")


WEB_TOKEN_MIN = 16


def check_web_token(v: SecretStr | None) -> SecretStr | None:
    """A page's bearer token (`[web] token`, `[tenants.X] web_token`): 16+ characters."""
    if v is not None and len(v.get_secret_value().strip()) < WEB_TOKEN_MIN:
        raise ValueError(
            f"use at least {WEB_TOKEN_MIN} characters (e.g. from `openssl rand -hex 16`)"
        )
    return v


def did_you_mean(given: str, known: list[str], prefix: str = "") -> str:
    """ "; did you mean llm.model?" for the known key nearest to a misspelt one, else ""."""
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.6)
    return f"; did you mean {prefix}{close[0]}?" if close else ""


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
    vision: bool = False  # the model sees images: photos go to it as image parts

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class _AudioServer(_Section):
    """An OpenAI-compatible audio endpoint; base_url and api_key default to [llm]'s
    server and key when [llm] is an OpenAI-compatible backend (bridge/llm/audio.py)."""

    enabled: bool = True
    base_url: str | None = None
    api_key: SecretStr | None = None
    timeout_s: float = Field(60.0, gt=0, le=600)
    max_retries: int = Field(2, ge=0, le=10)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class TranscribeSettings(_AudioServer):
    """`[llm.transcribe]`: voice notes in, `POST {base_url}/audio/transcriptions`."""

    model: str = "whisper-1"
    max_seconds: int = Field(300, ge=1, le=4 * 3600)  # checked before anything is downloaded
    max_bytes: int = Field(20 * 1024 * 1024, ge=1024, le=25 * 1024 * 1024)
    show: Literal["line", "quote", "off"] = "line"  # how the person sees what was heard
    keep_audio: bool = False  # keep the file in the inbox after transcription


class SpeechSettings(_AudioServer):
    """`[llm.speech]`: answers spoken, `POST {base_url}/audio/speech` (OGG/Opus)."""

    model: str = "tts-1"
    voice: str = "alloy"
    max_chars: int = Field(1500, ge=50, le=4096)  # the endpoint takes at most 4096


class EmbeddingSettings(_Section):
    """`[llm.embeddings]`: vectors for recall's hybrid search, `POST {base_url}/embeddings`.

    Off unless `enabled`; base_url and api_key then default to [llm]'s server and key when
    [llm] is an OpenAI-compatible backend (as the audio endpoints do)."""

    enabled: bool = False
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "text-embedding-3-small"
    dimensions: int | None = Field(None, ge=8, le=4096)  # asked for when set (OpenAI's v3)
    batch: int = Field(64, ge=1, le=2048)  # texts per request
    timeout_s: float = Field(60.0, gt=0, le=600)
    max_retries: int = Field(2, ge=0, le=10)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class DefaultLLMSettings(LLMSettings):
    """`[llm]`, the default model, plus the audio and embeddings endpoints (not part of a
    [models.X])."""

    transcribe: TranscribeSettings = Field(default_factory=new(TranscribeSettings))
    speech: SpeechSettings = Field(default_factory=new(SpeechSettings))
    embeddings: EmbeddingSettings = Field(default_factory=new(EmbeddingSettings))


_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}\.?$)({_LABEL}\.)*{_LABEL}\.?$")
HOST_EXAMPLE = 'e.g. host = "127.0.0.1" (or "localhost", "0.0.0.0", "::1") and the port in web.port'


def check_listen_host(v: str) -> str:
    """`[web] host`: a host name or an IP address to listen on, nothing else: a URL
    ("http://127.0.0.1") or "host:port" pasted in passed the check before and failed
    only at `roost serve`, with advice about the port."""
    text = v.strip()
    try:
        ipaddress.ip_address(text)
    except ValueError:
        if not HOST_NAME.fullmatch(text.lower()):
            raise ValueError(
                f"{v!r} is not a host name or IP address (no scheme, port or path): " + HOST_EXAMPLE
            ) from None
    return text


HOST_ENTRY = re.compile(r"^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(:\d{1,5})?$")


class WebSettings(_Section):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=0, le=65535)
    token: SecretStr | None = None
    # Host header values served besides loopback names (DNS-rebinding guard):
    # "name" (bare or with the listening port) or "name:port" (exactly).
    allowed_hosts: list[str] = Field(default_factory=empty_list)
    # GET /metrics (Prometheus text, bearer token): off unless the operator turns it on
    metrics: bool = False
    # a running answer whose page went away is stopped after this long without one back
    detach_grace_s: float = Field(30.0, ge=0, le=3600)
    # connections (bridge/channels/web/conns.py, bridge/app/descriptors.py): 0 = from the
    # descriptor budget at start; per client = per IPv4 address or IPv6 /64 (behind a
    # reverse proxy every request comes from the proxy: raise it, limit per client there)
    max_connections: int = Field(0, ge=0, le=1_000_000)
    max_connections_per_client: int = Field(64, ge=1, le=1_000_000)
    header_timeout_s: float = Field(10.0, gt=0, le=600)  # the request head, from connect
    body_timeout_s: float = Field(300.0, gt=0, le=86_400)  # the whole request body
    body_idle_s: float = Field(20.0, gt=0, le=3600)  # the longest pause within a body
    streams_per_token: int = Field(8, ge=1, le=10_000)  # open event streams per page token
    streams_per_tenant: int = Field(16, ge=1, le=10_000)  # ... and per tenant

    @field_validator("token")
    @classmethod
    def _token(cls, v: SecretStr | None) -> SecretStr | None:
        return check_web_token(v)

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        return check_listen_host(v)

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
    allowed_groups: list[int] = Field(default_factory=empty_list)
    audience: str | None = None
    start_attempts: int = Field(5, ge=1, le=20)  # unused: Telegram retries in the background
    reply_voice_to_voice: bool = False  # a voice note's answer is spoken too ([llm.speech])
    # a message that reaches roost later than this after it was sent (roost was down) is not
    # answered; the person is told (bridge/channels/telegram/replay.py)
    answer_max_age_s: int = Field(86_400, ge=60)
    # the first wait before Telegram is tried again after a failed start; each further try
    # waits twice as long, up to 5 minutes, with jitter (bridge/channels/telegram/health.py)
    reconnect_first_s: float = Field(1.0, ge=0.01, le=60.0)

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


GRAPH_API = "https://graph.facebook.com/v23.0"
TEMPLATE_NAME = re.compile(r"^[a-z0-9_]{1,512}$")
MATRIX_USER = re.compile(r"@[^\s:]{1,255}:[A-Za-z0-9.\-\[\]:]{1,255}")
# room version 12 ids are "!" and a hash, without ":server"
MATRIX_ROOM = re.compile(r"![\x21-\x7b\x7d\x7e]{1,255}")
LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]{2,8})?$")
# the keys a channel needs, all of them, to be on (one set alone leaves it off)
WHATSAPP_NEEDS = ("access_token", "app_secret", "phone_number_id")
MATRIX_NEEDS = ("homeserver", "user_id", "access_token")


class WhatsAppSettings(_Section):
    """`[whatsapp]`: the WhatsApp Cloud API (bridge/channels/whatsapp). On when
    `access_token`, `app_secret` and `phone_number_id` are all set."""

    access_token: SecretStr | None = None  # a permanent (system user) token
    app_secret: SecretStr | None = None  # signs the webhooks: X-Hub-Signature-256
    verify_token: SecretStr | None = None  # the webhook's GET verification (hub.verify_token)
    phone_number_id: str | None = None  # the business number's id (not the number itself)
    api_base_url: str = GRAPH_API  # the Graph API's versioned base
    # hosts the media URLs of GET /{media-id} may point at (besides the API's own host)
    media_hosts: list[str] = Field(default_factory=lambda: ["lookaside.fbsbx.com"])
    # outside the 24-hour window: an approved template whose body has one variable
    # {{1}} (the message, flattened to one line), else the message waits
    template: str | None = None
    template_language: str = "en"
    template_chars: int = Field(900, ge=20, le=1024)  # {{1}} at most; the template's text adds
    reply_voice_to_voice: bool = False  # a voice note's answer is spoken too ([llm.speech])

    @field_validator("api_base_url")
    @classmethod
    def _api(cls, v: str) -> str:
        if not re.fullmatch(r"https?://[^\s?#]+", v):
            raise ValueError("an http(s) URL, e.g. https://graph.facebook.com/v23.0")
        return v.rstrip("/")

    @field_validator("phone_number_id")
    @classmethod
    def _phone_id(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[0-9]{1,32}", v.strip()):
            raise ValueError("the number's id from WhatsApp Manager (digits)")
        return v.strip() if v is not None else None

    @field_validator("template")
    @classmethod
    def _template(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        if not TEMPLATE_NAME.fullmatch(v):
            raise ValueError("a template name: lowercase letters, digits and _")
        return v

    @field_validator("template_language")
    @classmethod
    def _language(cls, v: str) -> str:
        if not LANGUAGE_CODE.fullmatch(v):
            raise ValueError("a language code such as en, de or en_US")
        return v

    @field_validator("media_hosts")
    @classmethod
    def _media_hosts(cls, v: list[str]) -> list[str]:
        for host in v:
            if not HOST_ENTRY.fullmatch(host.lower()):
                raise ValueError(f"{host!r} is not a host name or host:port")
        return [host.lower() for host in v]

    @property
    def enabled(self) -> bool:
        return not self.missing

    @property
    def missing(self) -> tuple[str, ...]:
        """The keys of `WHATSAPP_NEEDS` that are unset (all of them: not configured)."""
        return tuple(key for key in WHATSAPP_NEEDS if getattr(self, key) is None)


class MatrixSettings(_Section):
    """`[matrix]`: a bot account on a Matrix homeserver (bridge/channels/matrix). On when
    `homeserver`, `user_id` and `access_token` are all set."""

    homeserver: str | None = None  # the client-server API's base, e.g. https://matrix.org
    user_id: str | None = None  # the bot's account, "@roost:example.org"
    access_token: SecretStr | None = None  # the bot account's token (a login's)
    # group rooms it may join and answer
    allowed_rooms: list[str] = Field(default_factory=empty_list)
    edit_every_s: float = Field(1.5, ge=0.2, le=30.0)  # streaming: at most one edit per this
    reply_voice_to_voice: bool = False  # a voice message's answer is spoken too ([llm.speech])

    @field_validator("homeserver")
    @classmethod
    def _homeserver(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"https?://[^\s?#]+", v):
            raise ValueError("an http(s) URL, e.g. https://matrix.example.org")
        return v.rstrip("/") if v is not None else None

    @field_validator("user_id")
    @classmethod
    def _user_id(cls, v: str | None) -> str | None:
        if v is not None and not MATRIX_USER.fullmatch(v.strip()):
            raise ValueError("a Matrix user id, e.g. @roost:example.org")
        return v.strip() if v is not None else None

    @field_validator("allowed_rooms")
    @classmethod
    def _rooms(cls, v: list[str]) -> list[str]:
        for room in v:
            if not MATRIX_ROOM.fullmatch(room.strip()):
                raise ValueError(f"{room!r} is not a room id (!opaque or !opaque:server)")
        return [room.strip() for room in v]

    @property
    def enabled(self) -> bool:
        return not self.missing

    @property
    def missing(self) -> tuple[str, ...]:
        """The keys of `MATRIX_NEEDS` that are unset (all of them: not configured)."""
        return tuple(key for key in MATRIX_NEEDS if getattr(self, key) is None)


class LimitSettings(_Section):
    max_message_chars: int = Field(16_000, ge=1)
    session_chars: int = Field(32_000, ge=1_000)
    session_idle_days: float = Field(7.0, gt=0)
    shutdown_grace_s: float = Field(10.0, ge=0)
    max_reply_chars: int = Field(32_000, ge=100)  # a longer model reply is cut visibly
    # token budgets per tenant (in + out, UTC day / month); None: no budget
    daily_tokens: int | None = Field(None, ge=1)
    monthly_tokens: int | None = Field(None, ge=1)
    # files sent with a message (bridge/senses): size, photos, documents, how long kept
    attachment_bytes: int = Field(20 * 1024 * 1024, ge=1024)  # per file, checked before download
    image_max_side: int = Field(1568, ge=64, le=8192)  # pixels: photos are downscaled to it
    document_chars: int = Field(20_000, ge=500)  # a document's text in the turn, then cut
    attachment_keep_hours: float = Field(72.0, gt=0)  # then removed from the inbox
    # reading them: one confined decoder process per file (bridge/senses/decoders.py)
    image_max_pixels: int = Field(40_000_000, ge=1_000_000)  # decoded (a JPEG's after draft)
    document_pages: int = Field(300, ge=1)  # a PDF's pages read at most
    decode_seconds: float = Field(20.0, gt=0, le=600)  # one file, then its decoder is stopped
    decode_memory_mb: int = Field(1024, ge=256)  # one decoder process's address space
    decoders: int = Field(2, ge=1, le=64)  # files read at once (one tenant: one fewer)


class QuotaSettings(_Section):
    """`[quota]`: disk space per tenant (bridge/core/quota.py)."""

    # the workspace (uploads in its inbox/ included) and exports (out/); 0: unlimited
    tenant_bytes: int = Field(4 * 1024**3, ge=0)


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
    private_hosts: list[str] = Field(default_factory=empty_list)
    net_requests_per_minute: int = Field(60, ge=1)  # per tenant, all its tools together
    # bytes one tool call may add to its workspace (forge.write_budget); over it
    # the call fails with kind "quota" and nothing half-written stays
    write_bytes_per_call: int = Field(64 * 1024 * 1024, ge=0)
    # seconds without a call after which a tenant's sandbox helper (with its
    # zygote and waiting children) is closed; the next call starts a new one (0: never)
    helper_idle_s: float = Field(300.0, ge=0)
    # a tenant's helper forked from a template that imported the sandbox's code once
    # (about 10x less CPU than a fresh `python -I -S`); helpers then share one address
    # layout and hash seed (docs/security.md). false: each helper is a fresh process
    fork_helpers: bool = True
    # `roost serve` starts one spare helper right after its ready line, so a new tenant's
    # first tool call does not wait for a helper's start-up (~0.2 s of CPU in processes of
    # its own, docs/security.md). false: no spare; the first tool call starts its helper
    # (and the machine's layers are probed then), for a daemon that never runs a tool
    spare_helper: bool = True

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

    command: list[str] = Field(default_factory=empty_list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    allow: list[str] = Field(default_factory=empty_list)
    timeout_s: float = Field(20.0, gt=0, le=600)  # list and each call
    # starting (a process that imports its SDK, `npx` fetching a package) takes longer
    start_timeout_s: float = Field(60.0, gt=0, le=600)

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


IDS_KEY = re.compile(r"^[a-z][a-z0-9]{1,23}_ids$")
MAX_IDS = 1000


class TenantRule(_Section):
    """`[tenants.NAME]`. The people of each platform are listed under the key its
    declaration names (`<platform>_ids`, e.g. `telegram_ids = [111111]`,
    `whatsapp_ids = ["4915112345678"]`: `bridge.types.platform`); here they are
    only checked to be lists, `bridge.core.identities` reads them per platform."""

    model_config = ConfigDict(extra="allow")
    # this tenant's bearer token for the web page and API (at least 16 characters)
    web_token: SecretStr | None = None
    # token budgets (in + out); None: the [limits] default; 0: no budget for this tenant
    daily_tokens: int | None = Field(None, ge=0)
    monthly_tokens: int | None = Field(None, ge=0)
    mcp: dict[str, McpServerSettings] = Field(default_factory=dict)  # external MCP servers

    @model_validator(mode="before")
    @classmethod
    def _identity_lists(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for key, value in data.items():
            if key in cls.model_fields:
                continue
            if not isinstance(key, str) or not IDS_KEY.fullmatch(key):
                hint = did_you_mean(str(key), list(cls.model_fields))
                raise ValueError(
                    f"{key}: unknown setting{hint} (a platform's people are listed as "
                    "<platform>_ids, e.g. telegram_ids)"
                )
            if isinstance(value, str):  # from the environment: a JSON list
                try:
                    value = json.loads(value)
                except ValueError:
                    raise ValueError(f'{key}: a list, e.g. [111111] or ["4915112345678"]') from None
            if not isinstance(value, list) or len(value) > MAX_IDS:
                raise ValueError(f"{key}: a list (at most {MAX_IDS})")
            if any(isinstance(v, bool) or not isinstance(v, (int, str)) for v in value):
                raise ValueError(f"{key}: numbers or strings")
            out[key] = list(value)
        return out

    def identities(self, key: str) -> list[object]:
        """The entries of `<platform>_ids` as written (empty when absent)."""
        value = (self.model_extra or {}).get(key, [])
        return list(value) if isinstance(value, list) else []

    @field_validator("web_token")
    @classmethod
    def _web_token(cls, v: SecretStr | None) -> SecretStr | None:
        return check_web_token(v)

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


class GradingSettings(_Section):
    """The outcome grader's second opinion (bridge/grading/judge.py)."""

    judge_model: str | None = None  # a model name ([llm] name or a [models.X]); None: default
    judge_daily_cap: int = Field(200, ge=0)  # follow-ups judged per tenant and UTC day; 0: off
    judge_batch: int = Field(8, ge=1, le=32)  # follow-ups at most in one judge request


class RecallSettings(_Section):
    """Search over everything said (bridge/recall)."""

    enabled: bool = True  # index every stored exchange; the recall tool and /recall
    retention_days: int = Field(0, ge=0)  # 0: keep every message as long as the tenant exists


class MemorySettings(_Section):
    """Memory topics over time (bridge/memory)."""

    archive_after_days: int = Field(90, ge=1)  # unused this long: out of the index, still readable
    inject_chars: int = Field(1_500, ge=0)  # topic bodies put before the newest message; 0: off
    inject_floor: float = Field(0.3, ge=0, le=1)  # share of the message's terms a topic must match


INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class DatabaseSettings(_Section):
    """`[database]`: where the machine state lives (bridge/app/database.py).

    No `url`: SQLite in the home (`roost.db`). `url = "postgresql://user@host/db"`:
    PostgreSQL for the stores ported onto `bridge.storage`. The URL is a secret
    (never logged; `bridge.storage.url.redact` is how it is shown); its password may
    instead be in `password_file` (one line; a systemd credential, 0600).
    """

    url: SecretStr | None = None
    password_file: Path | None = None
    pool_size: int = Field(10, ge=1, le=200)
    connect_timeout_s: float = Field(10.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _url(cls, v: SecretStr | None) -> SecretStr | None:
        text = "" if v is None else v.get_secret_value().strip()
        if not text:
            return None
        db_url.check(text)
        return SecretStr(text)

    @model_validator(mode="after")
    def _password_once(self) -> DatabaseSettings:
        if self.password_file is not None:
            if self.url is None:
                raise ValueError("password_file is set but url is not")
            if db_url.password_of(self.url.get_secret_value()) is not None:
                raise ValueError("url carries a password and password_file is set: use one")
        return self


class ClusterSettings(_Section):
    """`[cluster]`: this instance among several on one PostgreSQL database.

    `instance` names it (default: the host name); two live instances with one name
    are refused (a lease on the name, renewed while it runs, free again `lease_s`
    after its holder died). On SQLite the home's lock is the one-instance rule.
    """

    instance: str | None = None
    lease_s: float = Field(15.0, ge=1, le=600)

    @field_validator("instance")
    @classmethod
    def _instance(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        if not INSTANCE_NAME.fullmatch(v.strip()):
            raise ValueError("1-63 of A-Z, a-z, 0-9, '.', '_', '-'; first a letter or digit")
        return v.strip()

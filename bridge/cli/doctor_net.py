"""`roost doctor`'s network checks: each model server's model list and the Telegram Bot API.

Each is one short GET with a timeout and turns into a `Check`. A model server
whose `GET /models` answers no list (404 is common; roost does not need it)
is asked one chat request instead (`doctor_chat.probe_chat`). Secrets never
reach the output: the model server is named by scheme, host, port and path (the
`/v1` the operator wrote, or not), never a user, password or query, and every
message is scrubbed of the bot token and the API key, whatever an error string
contains. aiohttp and the chat probe's backend are imported by the
first check that asks a server: a doctor of a home with no model and no Telegram
configured imports neither.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import urlsplit

from bridge.core.config import Settings
from bridge.core.config_sections import LLMSettings
from bridge.core.words import count
from bridge.llm.select import OPENAI_DEFAULT_BASE_URL

if TYPE_CHECKING:
    import aiohttp

Status = Literal["ok", "warn", "FAIL"]


class Check(NamedTuple):
    status: Status
    name: str
    reason: str


def _host(url: str) -> str:
    """The URL's scheme, host and port: no user, password, path or query."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    host = parts.hostname or ""
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{port}"


def _address(url: str) -> str:
    """The address a check asked, as the operator wrote it in base_url (`/v1` shown, so
    a missing one is seen on an ok line too), without a user, password or query."""
    return _host(url) + urlsplit(url).path.rstrip("/")


def _scrub(text: str, *secrets: str) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def _client_error() -> type[aiohttp.ClientError]:
    """aiohttp's base error, for an `except` (evaluated only when something was raised)."""
    import aiohttp

    return aiohttp.ClientError


async def _get_json(url: str, headers: dict[str, str], timeout_s: float) -> tuple[int, Any]:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(url, headers=headers) as resp,
    ):
        try:
            body = await resp.json(content_type=None)
        except ValueError:
            body = None
        return resp.status, body


def _failure(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer (timed out)"
    return f"unreachable ({type(exc).__name__})"


async def check_backend(settings: Settings, timeout_s: float) -> Check:
    """The default model (`[llm]`): its server answers GET /models and lists it."""
    return await check_llm(settings.llm, timeout_s)


async def check_models(settings: Settings, timeout_s: float) -> list[Check]:
    """One line per model: `backend` for `[llm]`, `model:X` for each `[models.X]`."""
    named = sorted(settings.models.items())
    return list(
        await asyncio.gather(
            check_backend(settings, timeout_s),
            *(check_llm(llm, timeout_s, f"models.{name}") for name, llm in named),
        )
    )


async def check_llm(llm: LLMSettings, timeout_s: float, section: str = "llm") -> Check:
    """One model's server answers GET /models and lists the model (claude_cli: the
    executable exists)."""
    line = "backend" if section == "llm" else "model:" + section.removeprefix("models.")
    key = llm.api_key.get_secret_value().strip() if llm.api_key else ""
    base = (llm.base_url or "").strip()
    if llm.provider == "offline":
        return Check("ok", line, "offline (set explicitly): replies without a model")
    if llm.provider == "auto" and not base and not key:
        return Check("warn", line, f"offline: no {section}.base_url or {section}.api_key is set")
    if llm.provider == "claude_cli":
        found = shutil.which(llm.claude_path)
        if found is None:
            return Check("FAIL", line, f"claude_cli: {llm.claude_path!r} not found on PATH")
        return Check("ok", line, f"claude_cli: {found}")
    anthropic = llm.provider == "anthropic" or (
        llm.provider == "auto" and not base and key.startswith("sk-ant-")
    )
    if anthropic:  # an Anthropic key is only ever sent to the Anthropic API
        # the backend's module (its stream reader, retries...): only for an Anthropic check
        from bridge.llm.anthropic import API_VERSION, messages_url
        from bridge.llm.anthropic import DEFAULT_BASE_URL as ANTHROPIC_BASE_URL

        url = messages_url(base or ANTHROPIC_BASE_URL).removesuffix("/messages")
        headers = {"x-api-key": key, "anthropic-version": API_VERSION}
    else:
        url = (base or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
    where = _scrub(_address(url), key)
    try:
        status, body = await _get_json(f"{url}/models", headers, timeout_s)
    except (_client_error(), TimeoutError, OSError) as exc:
        return Check("FAIL", line, f"{where}: {_failure(exc)}")
    data = body.get("data") if isinstance(body, dict) else None
    if status in (401, 403):
        return Check(
            "FAIL", line, f"{where}: GET /models answered HTTP {status} (check {section}.api_key)"
        )
    if status != 200 or not isinstance(data, list):
        hint = "" if anthropic else _v1_hint(url, section, status)
        table = section.removeprefix("models.") if section.startswith("models.") else None
        return await _chat_instead(llm, timeout_s, line, where, status, hint, table)
    names = [m.get("id") for m in data if isinstance(m, dict)]
    if llm.model not in names:
        listed = _scrub(", ".join(str(n) for n in names[:5]) or "none", key)
        return Check("warn", line, f"{where}: model {llm.model} not listed ({listed})")
    return Check("ok", line, f"{where}: {count(len(names), 'model')}, {llm.model} among them")


def _v1_hint(url: str, section: str, status: int) -> str:
    """What to add to a failed chat request's line when the server answered 404 at a base
    URL that does not end in /v1 (Ollama's `http://127.0.0.1:11434`): an OpenAI-compatible
    server serves its API under /v1, so every path roost asks for is missing."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if status != 404 or path.endswith("/v1"):
        return ""
    return (
        f"; {section}.base_url does not end in /v1, where OpenAI-compatible servers "
        f'(Ollama, vLLM, llama.cpp) answer: try base_url = "{_host(url)}{path}/v1"'
    )


async def _chat_instead(
    llm: LLMSettings,
    timeout_s: float,
    line: str,
    where: str,
    status: int,
    hint: str = "",
    table: str | None = None,
) -> Check:
    """The model list is optional: without one, a one-word chat request decides; `hint`
    follows a failure that was a 404 too (`_v1_hint`)."""
    from bridge.cli.doctor_chat import probe_chat  # the backends: only for this fallback

    listed = f"GET /models answered HTTP {status}" if status != 200 else "GET /models sent no list"
    failed = await probe_chat(llm, timeout_s, table)
    if failed is None:
        return Check("ok", line, f"{where}: {llm.model} answered a chat request ({listed})")
    if "HTTP 404" not in failed and not failed.startswith("not_found"):
        hint = ""  # the chat path was there: /v1 is not what is wrong
    if hint:  # every path missing: not "no model 'x'", which sent people to llm.model
        failed = "HTTP 404 too"
    return Check(
        "FAIL", line, f"{where}: a chat request to {llm.model} failed, {failed} ({listed}){hint}"
    )


BOT_TOKEN = re.compile(r"^\d{3,}:[A-Za-z0-9_-]{30,}$")  # as @BotFather gives it


def _token_shape(token: str) -> str:
    """After a failed Bot API check: a hint when telegram.token is not shaped like a bot
    token (a paste that lost a part, a placeholder); never the token."""
    if BOT_TOKEN.fullmatch(token):
        return ""
    return (
        "; telegram.token does not look like a bot token (digits, a colon and about 35 "
        "letters, digits, - and _, as @BotFather gives it)"
    )


async def check_telegram(settings: Settings, timeout_s: float) -> list[Check]:
    """getMe (the token works) and getWebhookInfo (polling or the webhook and its errors)."""
    tg = settings.telegram
    token = tg.token.get_secret_value().strip() if tg.token else ""
    if not token:
        return [Check("ok", "telegram", "not configured (no telegram.token)")]
    base = tg.api_base_url + token
    try:
        me_status, me = await _get_json(f"{base}/getMe", {}, timeout_s)
        hook_status, hook = await _get_json(f"{base}/getWebhookInfo", {}, timeout_s)
    except (_client_error(), TimeoutError, OSError) as exc:
        said = _scrub(f"Bot API: {_failure(exc)}", token) + _token_shape(token)
        return [Check("FAIL", "telegram", said)]
    if me_status != 200 or not isinstance(me, dict) or not me.get("ok"):
        hint = " (the token was rejected)" if me_status in (401, 404) else ""
        said = f"getMe answered HTTP {me_status}{hint}{_token_shape(token)}"
        return [Check("FAIL", "telegram", said)]
    name = str(me.get("result", {}).get("username", "?"))
    checks = [Check("ok", "telegram", _scrub(f"getMe: @{name}", token))]
    result = hook.get("result") if isinstance(hook, dict) else None
    if hook_status != 200 or not isinstance(result, dict):
        return [*checks, Check("FAIL", "webhook", f"getWebhookInfo answered HTTP {hook_status}")]
    return [*checks, _webhook(result, token)]


def _webhook(info: dict[str, Any], token: str) -> Check:
    url, pending = str(info.get("url") or ""), int(info.get("pending_update_count") or 0)
    error = str(info.get("last_error_message") or "")
    if not url:
        return Check("ok", "webhook", f"none (long polling), {count(pending, 'update')} pending")
    state = f"set to {_host(url)}, {count(pending, 'update')} pending"
    if error:
        return Check("warn", "webhook", _scrub(f"{state}; last error: {error}", token))
    return Check("ok", "webhook", _scrub(state, token))

"""The `offline` backend: used when no model server is configured.

Every turn gets one short answer that says no model is configured (or, for a
model the operator set to `offline`, that it is one, and how to pick another)
and exactly how to configure one, so slash commands, the web page and the
terminal all work before a model exists. It makes no network call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bridge.types.backend import OFFLINE, Finish, ModelEvent, ModelRequest, TextDelta

CONFIG_ENV = """\
ROOST_LLM__BASE_URL  an OpenAI-compatible base URL, e.g. http://127.0.0.1:11434/v1 \
for Ollama, or https://api.openai.com/v1
ROOST_LLM__API_KEY   the server's API key (not needed for a local Ollama)
ROOST_LLM__MODEL     the model name, e.g. llama3.2 or gpt-4o-mini"""
CONFIG_TOML = '''\
[llm]
base_url = "http://127.0.0.1:11434/v1"
model = "llama3.2"'''


def _fenced(text: str, info: str = "") -> str:
    """A Markdown code block: every channel shows it as code, none re-flows it."""
    return f"```{info}\n{text}\n```"


NONE_CONFIGURED = "No model is configured, so I can only run slash commands (try /help)."
CHOSEN = (
    'This model is set to `provider = "offline"`, so I can only run slash commands (try'
    " /help). `/model` lists the models this roost has; `/model NAME` picks one for this chat."
)
CONNECT = f"""\
To connect a model, put these keys in the [llm] table of roost.toml (a running roost \
applies the file on its own, no restart):
{_fenced(CONFIG_TOML, "toml")}

or set these environment variables and restart roost:
{_fenced(CONFIG_ENV)}

For Claude: ROOST_LLM__API_KEY=sk-ant-... (Anthropic's API), or
ROOST_LLM__PROVIDER=claude_cli to use a logged-in Claude Code on this machine.
"""
OFFLINE_ANSWER = f"{NONE_CONFIGURED}\n\n{CONNECT}"  # no model at all (provider auto)
CHOSEN_ANSWER = f"{CHOSEN}\n\n{CONNECT}"  # a model the operator set to `offline`


class OfflineBackend:
    """Answers every turn with how to configure a model; `chosen`: the operator set this
    model's provider to `offline` (a named model a chat picked with `/model`, or the
    default), so the answer says so and how to pick another, not "no model is
    configured"."""

    name = OFFLINE

    def __init__(self, chosen: bool = False) -> None:
        self.chosen = chosen

    def describe(self) -> str:
        if self.chosen:
            return "offline (set in the configuration)"
        return "offline (no model configured)"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(CHOSEN_ANSWER if self.chosen else OFFLINE_ANSWER)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None

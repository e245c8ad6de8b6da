"""The `offline` backend: used when no model server is configured.

Every turn gets one short answer that says no model is configured and exactly
how to configure one, so slash commands, the web page and the terminal all
work before a model exists. It makes no network call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bridge.types.backend import Finish, ModelEvent, ModelRequest, TextDelta

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


OFFLINE_ANSWER = f"""\
No model is configured, so I can only run slash commands (try /help).

To connect a model, put these keys in the [llm] table of roost.toml (a running roost \
applies the file on its own, no restart):
{_fenced(CONFIG_TOML, "toml")}

or set these environment variables and restart roost:
{_fenced(CONFIG_ENV)}

For Claude: ROOST_LLM__API_KEY=sk-ant-... (Anthropic's API), or
ROOST_LLM__PROVIDER=claude_cli to use a logged-in Claude Code on this machine.
"""


class OfflineBackend:
    """Answers every turn with how to configure a model."""

    name = "offline"

    def describe(self) -> str:
        return "offline (no model configured)"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta(OFFLINE_ANSWER)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None

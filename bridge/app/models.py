"""The named models of a running roost: one backend per name, a choice per chat.

`[llm]` is the default model (named `default` unless `[llm] name = ...`);
each `[models.X]` table is another one, with the same keys. A `Generation`
holds the backends of one configuration, built at start (or at a reload)
through `bridge.llm.select.select_backend`. `ModelRegistry.hold(turn)` gives
a turn the model its chat chose (`/model`, the `chat_settings` key `model`)
for the length of the turn. A reload (`reload(settings)`) installs a new
generation: new turns use it, turns in flight keep the old backends, and the
old generation's backends are closed once its last turn has ended. A chat
whose model is gone falls back to the default, once told so in its reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from bridge.core.config import Settings
from bridge.core.config_sections import LLMSettings
from bridge.core.identity_memo import ByIdentity
from bridge.core.turn import ChosenModel
from bridge.loadout.chat_settings import ChatSettings
from bridge.types.backend import Backend, BackendError, ToolCaller, ToolEndpoint, ToolSchema
from bridge.types.tools import TurnContext

log = logging.getLogger("roost")

KEY = "model"  # the chat_settings key of a chat's model
_WRAPS = 64  # wrapped backends kept (a generation has a few; a reload makes new ones)
GONE = (
    "(The model {name!r} this chat used is no longer configured; "
    "this chat is back on the default model, {default!r}. /model lists the others.)"
)

# a backend of one model's table, and the table's [models.NAME] (None: [llm])
MakeBackend = Callable[[LLMSettings, str | None], tuple[Backend, str]]


def turn_tool_server(
    tools: Sequence[ToolSchema], call: ToolCaller
) -> AbstractAsyncContextManager[ToolEndpoint]:
    """The `ToolServer` a `claude_cli` backend gets: roost's MCP endpoint of one model call
    (the MCP SDK is imported on the first call, never by a roost without Claude Code)."""
    from bridge.mcp.turn_tools import serve_turn_tools

    return serve_turn_tools(tools, call)


def make_backend_of(llm: LLMSettings, table: str | None = None) -> tuple[Backend, str]:
    """A backend for one [llm] or [models.X] table (`table`: X), and why it was chosen (for
    the log); an error names the table's own settings."""
    from bridge.llm.select import select_backend

    key = llm.api_key.get_secret_value() if llm.api_key else None
    return select_backend(
        llm.provider,
        llm.base_url,
        key,
        llm.model,
        timeout_s=llm.timeout_s,
        max_retries=llm.max_retries,
        max_output_tokens=llm.max_output_tokens,
        claude_path=llm.claude_path,
        tool_server=turn_tool_server,
        table=table,
    )


def model_tables(settings: Settings) -> dict[str, LLMSettings]:
    """Name -> settings of every model, the default first."""
    return {settings.llm.name: settings.llm, **settings.models}


def make_backend(settings: Settings, name: str | None = None) -> tuple[Backend, str]:
    """The backend of the model `name` (None: the default, [llm]) and why it was chosen.

    Here, not in the composition root, so that the commands that only ask a model
    (`roost style sweep`, `roost grade --judge`) do not import `bridge.app.build`;
    `bridge.app.build` re-exports it."""
    chosen = name or settings.llm.name
    table = None if chosen == settings.llm.name else chosen
    return make_backend_of(model_tables(settings)[chosen], table)


@dataclass
class Generation:
    """The backends of one configuration; closed once retired and idle."""

    default: str
    backends: Mapping[str, Backend]
    reasons: Mapping[str, str] = field(default_factory=dict)
    users: int = 0
    retired: bool = False
    keep: frozenset[int] = frozenset()  # ids of backends the next generation reuses
    seeing: tuple[str, ...] = ()  # names of the models that can see images (`vision = true`)

    async def aclose(self) -> None:
        for backend in self.backends.values():
            if id(backend) not in self.keep:
                await backend.aclose()


def build_generation(
    settings: Settings, make: MakeBackend = make_backend_of, default: Backend | None = None
) -> Generation:
    """Every configured model's backend; `default` (tests, a backend passed in) replaces [llm]'s.

    Raises what `select_backend` raises; backends built before a failure are not leaked
    (they hold no connection until their first request).
    """
    backends: dict[str, Backend] = {}
    reasons: dict[str, str] = {}
    for name, llm in model_tables(settings).items():
        if name == settings.llm.name and default is not None:
            backends[name], reasons[name] = default, "backend passed in"
        else:
            backends[name], reasons[name] = make(llm, None if name == settings.llm.name else name)
    seeing = tuple(name for name, llm in model_tables(settings).items() if llm.vision)
    return Generation(settings.llm.name, backends, reasons, seeing=seeing)


class _Holding:
    """One `ModelRegistry.hold`: the chat's model picked on entry and its generation
    counted as in use until the exit (a plain object, not a generator-based manager:
    one per turn)."""

    __slots__ = ("_gen", "_registry", "_turn")

    def __init__(self, registry: ModelRegistry, turn: TurnContext) -> None:
        self._registry, self._turn = registry, turn
        self._gen: Generation | None = None

    async def __aenter__(self) -> ChosenModel:
        registry = self._registry
        gen = registry._current
        name = await registry._chosen(self._turn, gen)
        backend = gen.backends[name]
        gen.users += 1
        self._gen = gen
        return ChosenModel(name, registry._wrapped(backend))

    async def __aexit__(self, *exc: object) -> None:
        gen, self._gen = self._gen, None
        assert gen is not None
        gen.users -= 1
        if gen.retired and gen.users == 0:
            await gen.aclose()


class ModelRegistry:
    """Which model a chat uses, and the backends behind the names."""

    def __init__(
        self,
        generation: Generation,
        chats: ChatSettings | None,
        make: MakeBackend = make_backend_of,
        fixed_default: Backend | None = None,
        wrap: Callable[[Backend], Backend] | None = None,
    ) -> None:
        self._current = generation
        self._wrap = wrap  # e.g. timing each model step for /metrics
        self._chats = chats
        self._make = make
        self._fixed = fixed_default  # a backend passed in stays the default across reloads
        self._closing: set[asyncio.Task[None]] = set()
        self._wraps: ByIdentity[Backend, Backend] = ByIdentity(_WRAPS)  # backend -> wrapped

    @property
    def default(self) -> str:
        return self._current.default

    @property
    def default_backend(self) -> Backend:
        return self._current.backends[self._current.default]

    def describe_default(self) -> str:
        """The default model's provider and model id (as reloaded)."""
        return self.default_backend.describe()

    def names(self) -> list[tuple[str, str]]:
        """(name, provider and model) of every model, the default first; never an address."""
        return [(name, b.describe()) for name, b in self._current.backends.items()]

    def describe(self, name: str) -> str:
        backend = self._current.backends.get(name)
        return backend.describe() if backend is not None else "not configured"

    def backend(self, name: str | None) -> Backend:
        """The backend of `name` (None or unknown: the default), e.g. the style judge's."""
        found = self._current.backends.get(name or self.default)
        return found if found is not None else self.default_backend

    def chat_model(self, tenant: str, channel: str, chat: str) -> str:
        """The name this chat uses now (a stored name no longer configured: the default)."""
        stored = self._chats.get(tenant, channel, chat, KEY) if self._chats else None
        return stored if stored is not None and stored in self._current.backends else self.default

    def status_line(self, tenant: str, channel: str, chat: str) -> str:
        name = self.chat_model(tenant, channel, chat)
        return f"{self.describe(name)} (named {name})"

    def hold(self, turn: TurnContext) -> AbstractAsyncContextManager[ChosenModel]:
        """The chat's model for one turn; the backend stays open until the turn ends."""
        return _Holding(self, turn)

    def _wrapped(self, backend: Backend) -> Backend:
        """`backend` through `wrap`, made once per backend object (a reload's new
        generation makes them again: the kept ones are dropped with the old ones)."""
        if self._wrap is None:
            return backend
        kept = self._wraps.get(backend)
        return (
            kept if kept is not None else self._wraps.put(backend, None, None, self._wrap(backend))
        )

    async def _chosen(self, turn: TurnContext, gen: Generation) -> str:
        if self._chats is None:
            return gen.default
        i = turn.inbound
        stored = self._chats.get(turn.tenant, i.channel, i.chat, KEY)
        if stored is None or stored in gen.backends:
            return stored or gen.default
        await self._chats.clear(turn.tenant, i.channel, i.chat, KEY)  # told once
        turn.notices.append(GONE.format(name=stored, default=gen.default))
        return gen.default

    def sees(self, turn: TurnContext) -> bool:
        """Whether the chat's model (as `hold` would pick it) can see images."""
        i = turn.inbound
        name = self.chat_model(turn.tenant, i.channel, i.chat)
        return name in self._current.seeing

    def seeing(self) -> tuple[str, ...]:
        """The configured models that can see images."""
        return self._current.seeing

    def reload(self, settings: Settings) -> bool:
        """Install the models of `settings`; False (the old ones stay) when one cannot be built."""
        try:
            new = build_generation(settings, self._make, self._fixed)
        except (ValueError, BackendError) as exc:
            log.error("reload: the models stay as they were: %s", exc)
            return False
        self.replace(new)
        for name, why in new.reasons.items():
            log.info("model %s: %s", name, why)
        return True

    def replace(self, new: Generation) -> None:
        """Switch to `new`; the old backends close when their last turn ends."""
        old, self._current = self._current, new
        old.keep = frozenset(id(b) for b in new.backends.values())
        old.retired = True
        if old.users == 0:
            task = asyncio.get_running_loop().create_task(old.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        """Close every backend (at shutdown, after the turns have drained)."""
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        await self._current.aclose()

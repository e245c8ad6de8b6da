"""The agent loop: ask the model, run the tools it calls, repeat.

Given a system prompt, the conversation and the tools of this turn, it
streams text out through `on_delta`, runs tool calls (a failing tool becomes
a tool result the model can read, never a crash) and stops at a final answer
or at the step limit. It knows nothing about channels, tenants or storage.
The tools may be a function: it is asked again before every step, so a tool
made during the turn (a draft written with forge_create) can be called in it.

Everything that goes to the model passes one `redact` function first (the
tenant's vault masker): the system prompt, the history, the new message,
each tool's description and parameter schema (a draft's or an MCP server's
description is text someone else wrote), each tool result or error and the
model's own text sent back to it; a failure logged here is redacted too.
A reply longer than `max_reply_chars` is cut while it streams: the rest of
the model's stream is dropped and the cut is said in the text ("… [reply cut
at N characters]").
The result carries the turn's tool-call steps as the model saw them
(`AgentResult.tool_steps`), so the session can keep them for later turns.
A step that fails raises `AgentFailed` (a `BackendError`) carrying the
partial result, so the tokens of the steps before it are still counted.
An optional `progress` sink hears each tool call start and end (arguments
and result masked, cut) and each `Retrying` of the backend.

A backend whose model runs tools itself (Claude Code) gets `call_tool` on the
request: the same `_run_tool` path, each call kept as a tool step and counted
against `max_steps` (past it the model is told to answer), so the turn stores
and reports its tools whoever ran the loop.
"""

from __future__ import annotations

import json
import logging
import operator
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from bridge.core.diskfull import TOOL_DISK_FULL, disk_full
from bridge.core.identity_memo import ByIdentity
from bridge.types.backend import (
    Backend,
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
    Retrying,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolSchema,
)
from bridge.types.messages import DeltaSink
from bridge.types.progress import ProgressSink, RetryStep, ToolState, ToolStep, shown
from bridge.types.tools import Tool, ToolError, TurnContext

log = logging.getLogger(__name__)

Redact = Callable[[str], str]
MAX_TOOL_RESULT_CHARS = 16_000
MAX_REPLY_CHARS = 32_000


def _same(text: str) -> str:
    return text


def cut_note(limit: int) -> str:
    return f"… [reply cut at {limit:,} characters]"


@dataclass(slots=True)
class ToolRun:
    name: str
    ok: bool
    ms: int


@dataclass(slots=True)
class AgentResult:
    text: str
    steps: int
    tool_runs: list[ToolRun] = field(default_factory=list)
    stopped_at_limit: bool = False
    reply_cut: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    # the turn's tool-call steps as the model was given them (masked, in order):
    # each assistant message with tool_calls, then one tool result per call
    tool_steps: list[ChatMessage] = field(default_factory=list)


class AgentFailed(BackendError):
    """A model step failed; `partial` holds what the turn had done and used until then."""

    def __init__(self, cause: BackendError, partial: AgentResult) -> None:
        super().__init__(cause.kind, cause.user_message)
        self.partial = partial


async def run_agent(
    backend: Backend,
    system: str,
    messages: Sequence[ChatMessage],
    tools: Sequence[Tool] | Callable[[], Sequence[Tool]],
    turn: TurnContext,
    max_steps: int,
    on_delta: DeltaSink | None = None,
    *,
    redact: Redact = _same,
    max_reply_chars: int = MAX_REPLY_CHARS,
    tenant: str = "",
    stable_chars: int = 0,
    progress: ProgressSink | None = None,
) -> AgentResult:
    """Run model steps until a final answer; a failed step raises AgentFailed."""
    system = masked_system(system, redact)
    convo = _history_masked(messages, redact)
    result = AgentResult(text="", steps=0)
    reply = _Reply(max_reply_chars, on_delta, progress)
    for step in range(1, max_steps + 1):
        result.steps = step
        by_name, schemas = _offered(tools() if callable(tools) else tools, redact)
        request = ModelRequest(
            system,
            tuple(convo),
            schemas,
            tenant=tenant,
            stable_chars=stable_chars,
            call_tool=_Direct(by_name, turn, redact, progress, result, max_steps, step),
        )
        try:
            text, calls = await _stream_step(backend, request, reply, result)
        except BackendError as exc:
            raise AgentFailed(exc, result) from exc
        if result.reply_cut:
            await reply.add_note(text + "\n", cut_note(max_reply_chars), "\n")
            break
        if text:
            reply.pieces.append(text)
        if not calls:
            break
        taken = [_redacted(ChatMessage("assistant", text, tuple(calls)), redact)]
        for call in calls:
            output, run = await _reported(by_name, call, turn, redact, progress)
            result.tool_runs.append(run)
            taken.append(ChatMessage(role="tool", content=output, tool_call_id=call.id))
        convo.extend(taken)
        result.tool_steps.extend(taken)
    else:
        result.stopped_at_limit = True
        note = f"(I stopped after {max_steps} tool steps without a final answer.)"
        await reply.add_note("", note, "\n\n" if reply.pieces else "")
    result.text = "\n\n".join(reply.pieces)
    return result


@dataclass(slots=True)
class _Direct:
    """`ModelRequest.call_tool` of one step: a tool the backend's own model called."""

    by_name: Mapping[str, Tool]
    turn: TurnContext
    redact: Redact
    progress: ProgressSink | None
    result: AgentResult
    limit: int
    step: int

    async def __call__(self, name: str, arguments: str) -> str:
        n = len(self.result.tool_runs)
        if n >= self.limit:
            return (
                f"error: this turn's limit of {self.limit} tool calls is reached; "
                "answer now with what you have"
            )
        call = ToolCallRequest(f"direct_{self.step}_{n}", name, arguments)
        output, run = await _reported(self.by_name, call, self.turn, self.redact, self.progress)
        self.result.tool_runs.append(run)
        asked = _redacted(ChatMessage("assistant", "", (call,)), self.redact)
        self.result.tool_steps += [asked, ChatMessage("tool", output, tool_call_id=call.id)]
        return output


@dataclass(slots=True)
class _Reply:
    """The reply across steps: characters left, where deltas go, each step's text."""

    room: int
    on_delta: DeltaSink | None
    progress: ProgressSink | None = None
    pieces: list[str] = field(default_factory=list)

    async def add_note(self, before: str, note: str, sep: str) -> None:
        """End the reply with `note`: streamed after `sep`, stored after `before`."""
        if self.on_delta is not None:
            await self.on_delta(sep + note)
        self.pieces.append(before + note)


async def _stream_step(
    backend: Backend, request: ModelRequest, reply: _Reply, result: AgentResult
) -> tuple[str, list[ToolCallRequest]]:
    """One model step streamed: its text (cut at the reply's room) and its tool calls."""
    step_text: list[str] = []
    calls: list[ToolCallRequest] = []
    events = backend.stream(request)
    try:
        async for event in events:
            if isinstance(event, TextDelta):
                await _deliver(event.text, reply, result, step_text)
                if result.reply_cut:
                    break  # closing the stream drops the rest of a runaway reply
            elif isinstance(event, ToolCall):
                calls.append(event.call)
            elif isinstance(event, Retrying) and reply.progress is not None:
                await reply.progress(RetryStep(event.attempt, event.max, event.reason))
            elif isinstance(event, Finish):
                result.prompt_tokens += event.prompt_tokens
                result.completion_tokens += event.completion_tokens
                result.cached_tokens += event.cached_tokens
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    return "".join(step_text), calls


async def _deliver(text: str, reply: _Reply, result: AgentResult, step_text: list[str]) -> None:
    if len(text) > reply.room:
        text, result.reply_cut = text[: reply.room], True
    reply.room -= len(text)
    if text and reply.on_delta is not None:
        if not any(step_text) and reply.pieces:
            await reply.on_delta("\n\n")
        await reply.on_delta(text)
    step_text.append(text)


K = TypeVar("K")
V = TypeVar("V")


class _LastUsed(Generic[K, V]):
    """The last value put per key, for at most `size` keys: the least recently put
    goes first."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._entries: dict[K, V] = {}
        self._size = size

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        self._entries.pop(key, None)  # kept in order of use
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = value
        return value


def _masker_of(redact: Redact) -> tuple[object, object] | None:
    """(the masker object, its method) of a bound masker method: what the memos here are
    kept by; None when `redact` is not one (nothing to key on: mask every time)."""
    owner, func = getattr(redact, "__self__", None), getattr(redact, "__func__", None)
    return None if owner is None or func is None else (owner, func)


# a message -> the message masked by (masker, method)
_HISTORY: ByIdentity[ChatMessage, ChatMessage] = ByIdentity(8192)
LAST_HISTORIES = 256  # chats whose masked history is kept whole (the session cache's size)
# (id(masker), id(first message)) -> (the masker, the method, the last history that
# started with that message, their masked forms): one entry per chat's history
_LAST: _LastUsed[
    tuple[int, int], tuple[object, object, tuple[ChatMessage, ...], tuple[ChatMessage, ...]]
] = _LastUsed(LAST_HISTORIES)


def _history_masked(messages: Sequence[ChatMessage], redact: Redact) -> list[ChatMessage]:
    """`_redacted` of each message, remembered per (message object, masker object): the
    session store hands the same history objects every turn and the vault's masker is
    rebuilt only when the vault changed, so an unchanged history is not masked again each
    turn. The last history masked per (masker, first message) is kept too, so one per
    chat (a masker serves all of a tenant's chats, a chat's cached history keeps its
    first message object): the part of this one that starts with the same objects (a
    history grows by appending) is taken whole, found by identity checks in C; each
    message after it is one dict get and three identity checks. Held entries keep the
    objects alive, so no id is reused while cached."""
    masker = _masker_of(redact)
    if masker is None:
        return [_redacted(m, redact) for m in messages]
    owner, func = masker
    messages = tuple(messages)
    key = (id(owner), id(messages[0]) if messages else 0)
    last = _LAST.get(key)
    out: list[ChatMessage] = []
    if last is not None and last[0] is owner and last[1] is func:
        same = list(map(operator.is_, messages, last[2]))
        common = same.index(False) if False in same else len(same)
        out = list(last[3][:common])
    out.extend(_one_masked(m, redact, owner, func) for m in messages[len(out) :])
    _LAST.put(key, (owner, func, messages, tuple(out)))
    return out


def _one_masked(message: ChatMessage, redact: Redact, owner: object, func: object) -> ChatMessage:
    """`_redacted(message, redact)`, remembered per (message, masker, method) objects."""
    hit = _HISTORY.get(message, owner, func)
    if hit is not None:
        return hit
    return _HISTORY.put(message, owner, func, _redacted(message, redact))


def _history_redacted(message: ChatMessage, redact: Redact) -> ChatMessage:
    """`_history_masked` of one message (leaving the masker's last history as it was)."""
    masker = _masker_of(redact)
    if masker is None:
        return _redacted(message, redact)
    return _one_masked(message, redact, *masker)


def _redacted(message: ChatMessage, redact: Redact) -> ChatMessage:
    calls = message.tool_calls
    return ChatMessage(
        message.role,
        redact(message.content),
        tuple(ToolCallRequest(c.id, c.name, redact(c.arguments)) for c in calls) if calls else (),
        message.tool_call_id,
        message.name,
        message.images,  # bytes, nothing to mask
    )


# a system prompt -> (it masked by (masker, method), {stable length: its masked length})
_SYSTEMS: ByIdentity[str, tuple[str, dict[int, int]]] = ByIdentity(1024)


def _system_entry(system: str, redact: Redact) -> tuple[str, dict[int, int]]:
    masker = _masker_of(redact)
    if masker is None:
        return redact(system), {}
    hit = _SYSTEMS.get(system, *masker)
    if hit is not None:
        return hit
    return _SYSTEMS.put(system, *masker, (redact(system), {}))


def masked_system(system: str, redact: Redact) -> str:
    """`redact(system)`, remembered per (prompt, masker, method) objects as the history
    is (`_one_masked`): the prompt source hands the very same text while nothing it
    shows changed and the vault's masker is rebuilt only when the vault changed, so an
    unchanged prompt is masked once, not on every turn (nor twice more for its stable
    prefix, `masked_stable`)."""
    return _system_entry(system, redact)[0]


def masked_stable(system: str, stable: int, redact: Redact) -> int:
    """How long `system[:stable]` is once masked, when the masked prompt starts with it
    (the prefix a provider may cache), else 0; remembered with `masked_system`."""
    if stable <= 0:
        return stable
    masked, prefixes = _system_entry(system, redact)
    hit = prefixes.get(stable)
    if hit is None:
        head = redact(system[:stable])
        hit = prefixes[stable] = len(head) if masked.startswith(head) else 0
    return hit


_SCHEMA_TEXTS: ByIdentity[Mapping[str, Any], str] = ByIdentity(2048)  # their JSON


def _schema_text(parameters: Mapping[str, Any]) -> str:
    """The parameters as sorted JSON, encoded once per parameters object (the sources
    hand the same object every turn; the entry keeps it alive, so its id is not reused)."""
    hit = _SCHEMA_TEXTS.get(parameters)
    if hit is not None:
        return hit
    text = json.dumps(parameters, ensure_ascii=False, sort_keys=True)
    return _SCHEMA_TEXTS.put(parameters, None, None, text)


_SCHEMAS: ByIdentity[ToolSchema, ToolSchema] = ByIdentity(2048)  # masked by (masker, method)


def _schema_for_model(schema: ToolSchema, redact: Redact) -> ToolSchema:
    """`_redacted_schema`, remembered per (schema, masker, method) objects as the history
    is (`_one_masked`): the sources hand the same schema objects every turn and the
    vault's masker is rebuilt only when the vault changed, so an unchanged tool list is
    not masked again each step (eight tools: about 0.07 ms a turn here)."""
    return _schemas_for_model((schema,), redact)[0]


def _schemas_for_model(schemas: Iterable[ToolSchema], redact: Redact) -> tuple[ToolSchema, ...]:
    """`_schema_for_model` of each schema, the masker looked up once for them all."""
    masker = _masker_of(redact)
    if masker is None:
        return tuple(_redacted_schema(schema, redact) for schema in schemas)
    owner, func = masker
    get, put = _SCHEMAS.get, _SCHEMAS.put
    out = []
    for schema in schemas:
        hit = get(schema, owner, func)
        if hit is None:
            hit = put(schema, owner, func, _redacted_schema(schema, redact))
        out.append(hit)
    return tuple(out)


def _redacted_schema(schema: ToolSchema, redact: Redact) -> ToolSchema:
    """A tool as the model sees it: its description and parameter schema masked."""
    text = _schema_text(schema.parameters)
    masked = redact(text)
    parameters = schema.parameters
    if masked != text:
        try:
            parameters = json.loads(masked)
        except ValueError:  # a value spelled across the JSON's own quotes: keep no schema
            parameters = {"type": "object"}
    return ToolSchema(schema.name, redact(schema.description), parameters)


LAST_OFFERS = 256  # maskers (tenants) whose last tool list is kept as the model saw it
# id(masker) -> (the masker, the method, the tools, their schemas, by name, masked)
_OFFERS: _LastUsed[
    int,
    tuple[
        object,
        object,
        tuple[Tool, ...],
        tuple[ToolSchema, ...],
        Mapping[str, Tool],
        tuple[ToolSchema, ...],
    ],
] = _LastUsed(LAST_OFFERS)


def _offered(
    offered: Sequence[Tool], redact: Redact
) -> tuple[Mapping[str, Tool], tuple[ToolSchema, ...]]:
    """The step's tools by name and their schemas as the model sees them
    (`_schemas_for_model`): when the same tool objects with the same schema objects
    are offered under the same masker as last time (the sources hand the same objects
    every step and turn), both are the ones made then, found by identity checks in C."""
    tools = tuple(offered)
    schemas = tuple([t.schema for t in tools])
    masker = _masker_of(redact)
    if masker is None:
        return {t.schema.name: t for t in tools}, _schemas_for_model(schemas, redact)
    owner, func = masker
    last = _OFFERS.get(id(owner))
    if (
        last is not None
        and last[0] is owner
        and last[1] is func
        and len(last[2]) == len(tools)
        and all(map(operator.is_, tools, last[2]))
        and all(map(operator.is_, schemas, last[3]))
    ):
        return last[4], last[5]
    by_name = {s.name: t for t, s in zip(tools, schemas, strict=True)}
    masked = _schemas_for_model(schemas, redact)
    _OFFERS.put(id(owner), (owner, func, tools, schemas, by_name, masked))
    return by_name, masked


async def _reported(
    by_name: Mapping[str, Tool],
    call: ToolCallRequest,
    turn: TurnContext,
    redact: Redact,
    progress: ProgressSink | None,
) -> tuple[str, ToolRun]:
    """`_run_tool`, told to `progress` as it starts and ends (masked, cut)."""
    if progress is None:
        return await _run_tool(by_name, call, turn, redact)
    args = shown(redact(call.arguments))
    await progress(ToolStep(call.id, call.name, "start", args))
    output, run = await _run_tool(by_name, call, turn, redact)
    state: ToolState = "done" if run.ok else "error"
    await progress(ToolStep(call.id, call.name, state, args, shown(output), run.ms))
    return output, run


async def _run_tool(
    by_name: Mapping[str, Tool], call: ToolCallRequest, turn: TurnContext, redact: Redact
) -> tuple[str, ToolRun]:
    started = time.perf_counter()
    tool = by_name.get(call.name)
    ok = False
    if tool is None:
        known = ", ".join(sorted(by_name)) or "none"
        output = f"error: there is no tool named {call.name!r}; available tools: {known}"
    else:
        try:
            args = json.loads(call.arguments or "{}")
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            output = f"error: the arguments are not a JSON object ({exc}); send valid JSON"
        else:
            try:
                output = await tool(args, turn)
                ok = True
            except ToolError as exc:
                output = f"error: {exc}"
            except Exception as exc:
                output = _failed(call.name, exc, redact)
    output = redact(output)  # before the cut, so no part of a value survives it
    if len(output) > MAX_TOOL_RESULT_CHARS:
        cut = len(output) - MAX_TOOL_RESULT_CHARS
        output = output[:MAX_TOOL_RESULT_CHARS] + f"\n[cut: {cut:,} more characters]"
    ms = int((time.perf_counter() - started) * 1000)
    return output, ToolRun(call.name, ok, ms)


def _failed(name: str, exc: Exception, redact: Callable[[str], str]) -> str:
    """The result a tool's unexpected failure becomes (a full disk is said as such)."""
    if disk_full(exc):
        log.error("tool %s: the disk is full (%s)", name, exc)
        return TOOL_DISK_FULL
    trace = "".join(traceback.format_exception(exc))
    log.error("tool %s failed\n%s", name, redact(trace))
    return f"error: the tool {name} failed inside roost; do not retry it now"

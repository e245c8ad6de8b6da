"""The agent loop: ask the model, run the tools it calls, repeat.

Given a system prompt, the conversation and the tools of this turn, it
streams text out through `on_delta`, runs tool calls (a failing tool becomes
a tool result the model can read, never a crash) and stops at a final answer
or at the step limit. A step runs at most `MAX_CALLS_PER_STEP` of its tool
calls: the next ones get an "error: not run" result and, past
`MAX_KEPT_CALLS`, are dropped from the step (logged at WARNING once per
turn), so a flood of calls cannot grow the next request. A call's arguments
that are no JSON object, or nest deeper than `MAX_ARGS_DEPTH` (however
deep: Python's own RecursionError included), are a tool error too; a lone
surrogate in any of their strings (keys and values) is made U+FFFD before a
tool sees it. It knows nothing about channels, tenants or storage.
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
and result masked, cut) and each `Retrying` of the backend. The arguments
it shows pass `screen` (the turn's: also without what the secret screen
would refuse in them), and again once the call ran, so a call a screen
refused is not shown with its secret; `redact` is asked afresh for every
text (the turn's masker learns each refusal as it happens).
A call's name and id are the model's choice too: a name no offered tool has
is kept as `unknown_tool` (the model still hears which name it used, masked,
in the error result; the tool card shows it masked), an id that is not a short word
(`_ID`) becomes one of ours, and both are masked (`mask_memo.redacted`), so
the step stored, replayed and shown holds no secret there and each result
keeps its call's id.

A backend whose model runs tools itself (Claude Code) gets `call_tool` on the
request: the same `_run_tool` path, each call kept as a tool step and counted
against `max_steps` (past it the model is told to answer), so the turn stores
and reports its tools whoever ran the loop.
"""

from __future__ import annotations

import json
import logging
import re
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from secrets import token_hex

from bridge.core.diskfull import TOOL_DISK_FULL, disk_full
from bridge.core.mask_memo import MaskMemo, Redact, redacted, token
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
)
from bridge.types.messages import DeltaSink, valid_unicode
from bridge.types.progress import ProgressSink, RetryStep, ToolState, ToolStep, shown
from bridge.types.tools import Tool, ToolError, TurnContext

log = logging.getLogger(__name__)

MAX_TOOL_RESULT_CHARS = 16_000
MAX_REPLY_CHARS = 32_000
# Tool calls run per model step. Models call a handful at once; 32 covers a
# broad fan-out (read 20 memories) while bounding a step at 32 tool results of
# at most MAX_TOOL_RESULT_CHARS each (about 0.5M characters added to the next
# request), and a turn at max_steps (at most 50) x 32 = 1,600 runs.
MAX_CALLS_PER_STEP = 32
# Calls of one step kept in the transcript: those past MAX_CALLS_PER_STEP are
# answered "not run" up to here; the rest are dropped from the step (counted in
# the last "not run" result), so a flood cannot grow the next request.
MAX_KEPT_CALLS = 2 * MAX_CALLS_PER_STEP
# Nesting of a call's arguments (objects and arrays): no tool's parameters go
# deeper, and a bound keeps every walk over them (here and in the tools) shallow.
MAX_ARGS_DEPTH = 64
UNKNOWN_TOOL = "unknown_tool"  # what a call of a name no offered tool has is kept as
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a call id kept as the model sent it


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
    memo: MaskMemo | None = None,
    screen: Redact | None = None,
) -> AgentResult:
    """Run model steps until a final answer; a failed step raises AgentFailed. `memo`
    keeps what was masked for the next turns (the turn runner's; a fresh one if none);
    `screen` masks a call's arguments for `progress` (`redact` if none)."""
    memo = memo if memo is not None else MaskMemo()
    shows = _Shows(redact, screen or redact, progress)
    system = memo.system(system, redact)
    convo = memo.history(messages, redact)
    result = AgentResult(text="", steps=0)
    reply = _Reply(max_reply_chars, on_delta, progress)
    warned = False  # the cut of a step's tool calls is logged once per turn
    for step in range(1, max_steps + 1):
        result.steps = step
        by_name, schemas = memo.offered(tools() if callable(tools) else tools, redact)
        request = ModelRequest(
            system,
            tuple(convo),
            schemas,
            tenant=tenant,
            stable_chars=stable_chars,
            call_tool=_Direct(by_name, turn, shows, result, max_steps, step),
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
        if len(calls) > MAX_CALLS_PER_STEP and not warned:
            warned = True  # once per turn: a model that floods once floods every step
            log.warning(
                "tool calls cut (tenant %s, step %d): the model asked for %d in one step; "
                "the first %d run, the rest do not",
                tenant,
                step,
                len(calls),
                MAX_CALLS_PER_STEP,
            )
        kept = [_fair(c, by_name, step, n) for n, c in enumerate(calls[:MAX_KEPT_CALLS])]
        asked = redacted(ChatMessage("assistant", text, tuple(kept)), redact)
        ids = [c.id for c in asked.tool_calls]  # each result pairs with its call as masked
        taken = [asked]
        for n, call in enumerate(calls[:MAX_CALLS_PER_STEP]):
            output, run = await _reported(by_name, call, kept[n], turn, shows)
            result.tool_runs.append(run)
            taken.append(ChatMessage(role="tool", content=output, tool_call_id=ids[n]))
        over = ids[MAX_CALLS_PER_STEP:]  # each call kept gets a result: a valid transcript
        for n, call_id in enumerate(over, 1):
            output = _not_run(len(calls), len(calls) - len(kept) if n == len(over) else 0)
            taken.append(ChatMessage(role="tool", content=output, tool_call_id=call_id))
        convo.extend(taken)
        result.tool_steps.extend(taken)
    else:
        result.stopped_at_limit = True
        note = f"(I stopped after {max_steps} tool steps without a final answer.)"
        await reply.add_note("", note, "\n\n" if reply.pieces else "")
    result.text = "\n\n".join(reply.pieces)
    return result


def _fair(call: ToolCallRequest, by_name: Mapping[str, Tool], step: int, n: int) -> ToolCallRequest:
    """`call` as it is kept and shown: a name no offered tool has is `UNKNOWN_TOOL`, an id
    that is no short word is one of ours (unique in the conversation)."""
    name = call.name if call.name in by_name else UNKNOWN_TOOL
    call_id = call.id if _ID.fullmatch(call.id) else f"call_{step}_{n}_{token_hex(4)}"
    if name == call.name and call_id == call.id:
        return call
    return replace(call, id=call_id, name=name)


@dataclass(frozen=True, slots=True)
class _Shows:
    """How a turn masks what it shows: `redact` (the model, the results), `screen` (a
    call's arguments on the tool card), `progress` (the card's sink, if any)."""

    redact: Redact
    screen: Redact
    progress: ProgressSink | None


@dataclass(slots=True)
class _Direct:
    """`ModelRequest.call_tool` of one step: a tool the backend's own model called."""

    by_name: Mapping[str, Tool]
    turn: TurnContext
    shows: _Shows
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
        kept = _fair(call, self.by_name, self.step, n)
        output, run = await _reported(self.by_name, call, kept, self.turn, self.shows)
        self.result.tool_runs.append(run)
        asked = redacted(ChatMessage("assistant", "", (kept,)), self.shows.redact)
        call_id = asked.tool_calls[0].id
        self.result.tool_steps += [asked, ChatMessage("tool", output, tool_call_id=call_id)]
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


async def _reported(
    by_name: Mapping[str, Tool],
    call: ToolCallRequest,
    kept: ToolCallRequest,
    turn: TurnContext,
    shows: _Shows,
) -> tuple[str, ToolRun]:
    """`_run_tool`, told to `progress` as it starts and ends (masked, cut): under the id it
    is `kept` with and the name the model used (masked), so the person sees what it tried;
    its arguments screened again once it ran (a screen may have refused them meanwhile)."""
    redact, progress = shows.redact, shows.progress
    if progress is None:
        output, run = await _run_tool(by_name, call, turn, redact)
    else:
        step_id, name = token(kept.id, redact), token(call.name, redact)
        await progress(ToolStep(step_id, name, "start", shown(shows.screen(call.arguments))))
        output, run = await _run_tool(by_name, call, turn, redact)
        state: ToolState = "done" if run.ok else "error"
        args = shown(shows.screen(call.arguments))
        await progress(ToolStep(step_id, name, state, args, shown(output), run.ms))
    run.name = token(call.name, redact)
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
            args = _arguments(call.arguments)
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


def _not_run(asked: int, dropped: int) -> str:
    """The result of a call past the step's cap (`dropped`: calls left out after it)."""
    more = f"; the {dropped:,} calls after this one were dropped unrun too" if dropped else ""
    return (
        f"error: not run: this step asked for {asked:,} tool calls and at most "
        f"{MAX_CALLS_PER_STEP} run per step{more}; call again in the next step what you "
        "still need"
    )


def _arguments(text: str) -> dict[str, object]:
    """A call's arguments decoded (`_valid`); ValueError when they are no JSON object."""
    try:
        decoded = json.loads(text or "{}")
    except RecursionError:  # "[[[[…": nested past Python's own stack
        raise ValueError(f"nested deeper than {MAX_ARGS_DEPTH} levels") from None
    args = _valid(decoded, 0)
    if not isinstance(args, dict):
        raise ValueError("arguments must be a JSON object")
    return args


def _valid(value: object, depth: int) -> object:
    """Decoded arguments with each lone surrogate in a string (key or value) made U+FFFD,
    so no tool meets text that cannot be encoded; ValueError past MAX_ARGS_DEPTH."""
    if isinstance(value, str):
        return valid_unicode(value)
    if isinstance(value, dict | list):
        if depth >= MAX_ARGS_DEPTH:
            raise ValueError(f"nested deeper than {MAX_ARGS_DEPTH} levels")
        if isinstance(value, list):
            return [_valid(v, depth + 1) for v in value]
        return {_valid(k, depth): _valid(v, depth + 1) for k, v in value.items()}
    return value


def _failed(name: str, exc: Exception, redact: Callable[[str], str]) -> str:
    """The result a tool's unexpected failure becomes (a full disk is said as such)."""
    if disk_full(exc):
        log.error("tool %s: the disk is full (%s)", name, exc)
        return TOOL_DISK_FULL
    trace = "".join(traceback.format_exception(exc))
    log.error("tool %s failed\n%s", name, redact(trace))
    return f"error: the tool {name} failed inside roost; do not retry it now"

"""The model turns running now, one per chat: stop one, or attach and follow it.

`RunningTurns.run(key, turn, on_delta, on_progress)` runs one turn in a task
of its own, remembers the text shown so far and passes every piece and
progress report on to the caller's sinks and to whoever attached since
(`attach(key)`: the text so far, then the live events and the `Final`).
`stop(key)` cancels that task: the cancellation reaches the model request
(its stream is closed, so the HTTP connection is dropped) and a running
sandbox call (its worker is killed). The turn sees `stop_requested()` true
while it unwinds, keeps the partial answer marked `stopped_text(...)` and
audits `message.failed` kind `stopped`; `run` then returns that text as a
`Final` of kind `stopped` instead of failing (ending with the notices of what
the turn's tools changed before the stop, and offering their undo actions:
`stopped_changes`), and the chat's lock is free
for the next message at once. A cancellation of the caller (shutdown) still
cancels the turn and propagates as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from bridge.types.messages import Action, DeltaSink, Final
from bridge.types.progress import Progress, ProgressSink

K = TypeVar("K")
STOPPED_MARK = "[stopped]"
Turn = Callable[[DeltaSink, ProgressSink], Coroutine[object, object, Final]]
Event = (
    tuple[Literal["delta"], str]
    | tuple[Literal["progress"], Progress]
    | tuple[Literal["final"], Final]
)


def stopped_text(partial: str) -> str:
    """The answer kept when a turn is stopped: what was shown, marked."""
    partial = partial.rstrip()
    return f"{partial} … {STOPPED_MARK}" if partial else STOPPED_MARK


def is_stopped(text: str) -> bool:
    """Whether a stored answer is a stopped one (`stopped_text`)."""
    return text.endswith(STOPPED_MARK)


@dataclass(slots=True)
class _Flag:
    stopped: bool = False
    changes: str = ""  # the notices of what the stopped turn's tools changed (masked)
    actions: tuple[Action, ...] = ()  # and their undo actions


_STOP: contextvars.ContextVar[_Flag | None] = contextvars.ContextVar("roost_stop", default=None)


def stop_requested() -> bool:
    """Inside a turn run by `RunningTurns`: whether the person asked to stop it."""
    flag = _STOP.get()
    return flag is not None and flag.stopped


def stopped_changes(notices: str, actions: tuple[Action, ...]) -> None:
    """Inside a stopped turn: what its tools changed before the stop (the notices, masked,
    and their undo actions), for the `stopped` Final to end with and offer."""
    flag = _STOP.get()
    if flag is not None:
        flag.changes, flag.actions = notices, actions


@dataclass(slots=True)
class _Run:
    flag: _Flag = field(default_factory=_Flag)
    shown: list[str] = field(default_factory=list)
    listeners: set[asyncio.Queue[Event]] = field(default_factory=set)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[Final] | None = None
    asked: str = ""  # the message being answered (shown again on a reload)
    started: float = 0.0

    def tell(self, event: Event) -> None:
        for queue in self.listeners:
            queue.put_nowait(event)


@dataclass(frozen=True, slots=True)
class Attached:
    """A turn followed from the middle: the text so far, then its events."""

    text: str
    queue: asyncio.Queue[Event]

    async def events(self) -> AsyncIterator[Event]:
        """The live events, the last one `("final", Final)`."""
        while True:
            event = await self.queue.get()
            yield event
            if event[0] == "final":
                return


class RunningTurns(Generic[K]):
    """Running turns by chat key (the core's `SessionKey`)."""

    def __init__(self, retry_s: float = 5.0) -> None:
        self._runs: dict[K, _Run] = {}
        self._retry_s = retry_s  # a cancellation swallowed on the way is repeated after this

    def running(self, key: K) -> bool:
        return key in self._runs

    def asked(self, key: K) -> tuple[str, float] | None:
        """The message the running turn answers and when it started (None: nothing runs)."""
        run = self._runs.get(key)
        return None if run is None else (run.asked, run.started)

    async def run(
        self,
        key: K,
        turn: Turn,
        on_delta: DeltaSink | None = None,
        on_progress: ProgressSink | None = None,
        asked: str = "",
        now: float = 0.0,
    ) -> Final:
        """Run `turn` as the chat's running turn; a stop makes it a `stopped` Final."""
        run = _Run(asked=asked, started=now)

        async def delta(piece: str) -> None:
            run.shown.append(piece)
            run.tell(("delta", piece))
            if on_delta is not None:
                await on_delta(piece)

        async def progress(report: Progress) -> None:
            run.tell(("progress", report))
            if on_progress is not None:
                await on_progress(report)

        context = contextvars.copy_context()
        context.run(_STOP.set, run.flag)
        run.task = asyncio.create_task(turn(delta, progress), context=context)
        self._runs[key] = run
        final: Final | None = None  # a failure told to the listeners as stopped
        try:
            final = await run.task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not run.flag.stopped or (current is not None and current.cancelling()):
                raise  # shutdown (or the caller went away): cancelled as before
            text = stopped_text("".join(run.shown))
            if run.flag.changes:  # what its tools changed before the stop, with their undo
                text = f"{text}\n\n{run.flag.changes}"
            final = Final(text, "stopped", actions=run.flag.actions)
        finally:
            if self._runs.get(key) is run:
                del self._runs[key]
            run.tell(("final", final or Final(stopped_text(""), "stopped")))
            run.ended.set()
        return final

    def attach(self, key: K) -> Attached | None:
        """Follow the chat's running turn (None when nothing runs)."""
        run = self._runs.get(key)
        if run is None:
            return None
        queue: asyncio.Queue[Event] = asyncio.Queue()
        run.listeners.add(queue)
        return Attached("".join(run.shown), queue)

    def detach(self, key: K, attached: Attached) -> None:
        run = self._runs.get(key)
        if run is not None:
            run.listeners.discard(attached.queue)

    async def stop(self, key: K, wait_s: float = 30.0) -> bool:
        """Cancel the chat's running turn and wait until it has ended; False if none ran."""
        run = self._runs.get(key)
        if run is None or run.task is None or run.task.done():
            return False
        run.flag.stopped = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                while not run.ended.is_set():
                    run.task.cancel()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(run.ended.wait(), self._retry_s)
        return True

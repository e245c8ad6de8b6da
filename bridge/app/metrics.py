"""Counters and histograms for `/metrics`, in the Prometheus text format (written by hand).

`Metrics` is one small registry per roost (no global): `count()` and
`observe()` record, `render()` writes the text exposition format 0.0.4
(`# HELP`, `# TYPE`, cumulative `_bucket{le=...}`, `_sum`, `_count`).
Label values come from closed enums of the audit schema, never from what a
person typed, so the number of series is bounded.

`MeteredAudit` wraps the audit sink at the composition root and counts
from the events that already describe each turn: `message.answered` (turns,
turn latency), `message.failed` (failed turns by kind), `tool.called`
(outcome, error kind), `outbox.failed` on Telegram (send failures of kind
`outbox`) and the size of each batch written to the chain. The Telegram
channel reports its other failed sends itself (`Metrics.telegram_failed`:
reply, command, draft, rejected, typing). `TimedBackend` wraps the model
backend the turns use and times each model step until its stream ends,
by backend name (`roost_model_seconds`).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bridge.types.audit_sink import AuditSink, Event, QueueMany
from bridge.types.backend import Backend, ModelEvent, ModelRequest

SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
BATCH = (1, 2, 3, 4, 6, 8, 12, 16, 32)
Labels = tuple[tuple[str, str], ...]


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    buckets: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        if not self.buckets:
            self.buckets = [0] * len(self.bounds)
        index = bisect.bisect_left(self.bounds, value)
        if index < len(self.bounds):
            self.buckets[index] += 1
        self.total += value
        self.count += 1


@dataclass(frozen=True)
class _Family:
    name: str
    kind: str  # counter | histogram
    help: str
    bounds: tuple[float, ...] = ()


FAMILIES = (
    _Family("roost_turns_total", "counter", "Turns that ended, by outcome (answer, failed)."),
    _Family("roost_turn_seconds", "histogram", "Time from message to answer.", SECONDS),
    _Family("roost_model_seconds", "histogram", "One model step, by backend.", SECONDS),
    _Family("roost_model_failures_total", "counter", "Failed turns by backend error kind."),
    _Family("roost_tool_calls_total", "counter", "Personal tool calls by outcome."),
    _Family("roost_tool_failures_total", "counter", "Failed personal tool calls by kind."),
    _Family(
        "roost_telegram_send_failures_total",
        "counter",
        "Telegram sends that failed for good, by kind "
        "(reply, command, draft, rejected, typing, outbox).",
    ),
    _Family("roost_audit_batch_size", "histogram", "Audit records written per batch.", BATCH),
    _Family(
        "roost_channel_ignored_total",
        "counter",
        "Platform updates a channel left out unanswered, by channel and kind.",
    ),
)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[str, str] | None = None) -> str:
    pairs = [*labels, *([extra] if extra else [])]
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _key(labels: dict[str, str]) -> Labels:
    """The series' labels, sorted by name (one label or none: nothing to sort)."""
    return tuple(labels.items()) if len(labels) < 2 else tuple(sorted(labels.items()))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Metrics:
    """The registry: named families, each with series keyed by sorted labels."""

    def __init__(self) -> None:
        self._families = {f.name: f for f in FAMILIES}
        self._counters: dict[str, dict[Labels, float]] = {}
        self._histograms: dict[str, dict[Labels, _Histogram]] = {}

    def count(self, name: str, amount: float = 1, **labels: str) -> None:
        series = self._counters.get(name)
        if series is None:
            assert self._families[name].kind == "counter", name
            series = self._counters[name] = {}
        key = _key(labels)
        series[key] = series.get(key, 0) + amount

    def observe(self, name: str, value: float, **labels: str) -> None:
        series = self._histograms.get(name)
        if series is None:
            assert self._families[name].kind == "histogram", name
            series = self._histograms[name] = {}
        key = _key(labels)
        hist = series.get(key)
        if hist is None:  # made once per series, not on every call
            hist = series[key] = _Histogram(self._families[name].bounds)
        hist.observe(value)

    def telegram_failed(self, kind: str) -> None:
        """A Telegram send of this kind failed after its retries (the channel tells)."""
        self.count("roost_telegram_send_failures_total", kind=kind)

    def ignored(self, channel: str, kind: str, amount: int = 1) -> None:
        """A channel left `amount` updates of `kind` out (unknown types, other numbers)."""
        self.count("roost_channel_ignored_total", amount, channel=channel, kind=kind)

    def render(self) -> str:
        lines: list[str] = []
        for family in self._families.values():
            lines += [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
            if family.kind == "counter":
                for key, value in sorted(self._counters.get(family.name, {}).items()):
                    lines.append(f"{family.name}{_labels(key)} {_number(value)}")
            else:
                for key, hist in sorted(self._histograms.get(family.name, {}).items()):
                    lines += _histogram_lines(family.name, key, hist)
        return "\n".join(lines) + "\n"


def _histogram_lines(name: str, key: Labels, hist: _Histogram) -> list[str]:
    out, running = [], 0
    for bound, hits in zip(hist.bounds, hist.buckets or [0] * len(hist.bounds), strict=True):
        running += hits
        out.append(f"{name}_bucket{_labels(key, ('le', _number(bound)))} {running}")
    out.append(f"{name}_bucket{_labels(key, ('le', '+Inf'))} {hist.count}")
    out.append(f"{name}_sum{_labels(key)} {_number(hist.total)}")
    out.append(f"{name}_count{_labels(key)} {hist.count}")
    return out


def _record(metrics: Metrics, event: str, details: Mapping[str, object]) -> None:
    """Count what one audit event says about the roost's work."""
    if event == "message.answered":
        metrics.count("roost_turns_total", outcome="answer")
        ms = details.get("ms")
        if isinstance(ms, int):
            metrics.observe("roost_turn_seconds", ms / 1000)
    elif event == "message.failed":
        metrics.count("roost_turns_total", outcome="failed")
        metrics.count("roost_model_failures_total", kind=str(details.get("kind", "unknown")))
    elif event == "tool.called":
        outcome = str(details.get("outcome", "unknown"))
        metrics.count("roost_tool_calls_total", outcome=outcome)
        if outcome != "ok":
            kind = str(details.get("error_kind", "unknown"))
            metrics.count("roost_tool_failures_total", kind=kind)
    elif event == "outbox.failed" and details.get("channel") == "telegram":
        metrics.telegram_failed("outbox")


class MeteredAudit:
    """An AuditSink that counts what passes through it, then hands it on unchanged."""

    def __init__(self, inner: AuditSink, metrics: Metrics) -> None:
        self.inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)  # what a test or tool reads from the sink (events)

    async def emit(self, event: str, tenant: str | None, details: Mapping[str, object]) -> None:
        await self.inner.emit(event, tenant, details)
        self._metrics.observe("roost_audit_batch_size", 1)
        _record(self._metrics, event, details)

    async def emit_many(self, events: Sequence[Event]) -> None:
        await self.inner.emit_many(events)
        self._counted(events)

    @property
    def queue_many(self) -> QueueMany:
        """The inner sink's `queue_many`, counting a batch once it is durable (an
        AttributeError, as for any attribute the inner sink lacks, when it has none)."""
        inner: QueueMany = self.inner.queue_many  # type: ignore[attr-defined]

        def queue_many(events: Sequence[Event]) -> asyncio.Future[Any] | None:
            done = inner(events)
            if done is not None:
                done.add_done_callback(partial(self._durable, events))
            return done

        return queue_many

    def _durable(self, events: Sequence[Event], done: asyncio.Future[Any]) -> None:
        if not done.cancelled() and done.exception() is None:
            self._counted(events)

    def _counted(self, events: Sequence[Event]) -> None:
        self._metrics.observe("roost_audit_batch_size", len(events))
        for event, _tenant, details in events:
            _record(self._metrics, event, details)


class TimedBackend:
    """A Backend that observes how long each model step takes (`roost_model_seconds`)."""

    def __init__(
        self,
        inner: Backend,
        metrics: Metrics,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._metrics, self._clock = metrics, clock

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def describe(self) -> str:
        return self.inner.describe()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """The inner stream, timed from the call until it ends, fails or is dropped."""
        started = self._clock()
        try:
            async for event in self.inner.stream(request):
                yield event
        finally:
            elapsed = self._clock() - started
            self._metrics.observe("roost_model_seconds", elapsed, backend=self.inner.name)

    async def aclose(self) -> None:
        await self.inner.aclose()

"""Helpers for the model-backend tests: constants, a sleep recorder, collect()."""

from __future__ import annotations

from typing import Any

from bridge.types.backend import ChatMessage, ModelEvent, ModelRequest

KEY = "sk-test-0123456789abcdef"
MODEL = "fake-model"
REQUEST = ModelRequest(system="You are terse.", messages=[ChatMessage("user", "hi")])


class SleepRecorder:
    """An injected `sleep` that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def collect(backend: Any, request: ModelRequest = REQUEST) -> list[ModelEvent]:
    return [event async for event in backend.stream(request)]

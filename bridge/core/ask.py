"""One side request to a model, read to its end: the answer's text, bounded.

Conversation summaries, the memory tidy-up, the outcome judge and the style
judge each ask a model a small fixed prompt and want its text, not a stream.
`read_answer` keeps the text deltas up to `limit` characters and hands every
`Finish` (the request's token usage) to `on_finish`; past the limit it reads
on without keeping text, so the usage still arrives, but stops for good at
`READ_ON` times the limit (a runaway answer is never read to its end). The
stream is closed however the reading ends.
"""

from __future__ import annotations

from collections.abc import Callable

from bridge.types.backend import Backend, Finish, ModelRequest, TextDelta

READ_ON = 4


async def read_answer(
    backend: Backend,
    request: ModelRequest,
    limit: int,
    on_finish: Callable[[Finish], None] | None = None,
) -> str:
    """The answer's text (at most about `limit` characters); BackendError propagates."""
    pieces: list[str] = []
    kept = seen = 0
    events = backend.stream(request)
    try:
        async for event in events:
            if isinstance(event, TextDelta):
                seen += len(event.text)
                if kept <= limit:
                    pieces.append(event.text)
                    kept += len(event.text)
                if seen > READ_ON * limit:
                    break
            elif isinstance(event, Finish) and on_finish is not None:
                on_finish(event)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    return "".join(pieces)

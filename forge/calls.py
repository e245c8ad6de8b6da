"""One call of a saved `me.*` tool: load it once (metadata and source, hash
verified), ask `reveal` for exactly the secrets it declares, run it in the
sandbox, count the use. The caller's audit event is built from the returned
`Call` (name, hash prefix, duration, outcome), never from arguments.

The runner is the one place that narrows secrets to what the source declares
(forge.runner); nothing here filters them again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.library import IntegrityError, SavedTool, ToolLibrary, ToolNotFound
from forge.net_call import NetScope
from forge.runner import RunResult, SandboxRunner

Reveal = Callable[[tuple[str, ...]], Awaitable[Mapping[str, str]]]


@dataclass(frozen=True, slots=True)
class Call:
    tool: SavedTool | None  # None when it could not be loaded
    result: RunResult


async def call_saved(
    runner: SandboxRunner,
    library: ToolLibrary,
    name: str,
    params: Mapping[str, Any],
    workspace: Path,
    reveal: Reveal | None = None,
    timeout_s: float | None = None,
    net: NetScope | None = None,
    write_bytes: int | None = None,
) -> Call:
    try:
        tool = library.load_verified(name)
    except (IntegrityError, ToolNotFound) as exc:
        return Call(None, RunResult(False, None, "denied", str(exc)))
    secrets = await reveal(tool.spec.secrets) if reveal and tool.spec.secrets else {}
    result = await runner.run(
        tool.spec.source, params, workspace, secrets, timeout_s, net, write_bytes
    )
    library.record_use(tool.spec.name, result.ok)
    return Call(tool, result)

"""One call of a saved `me.*` tool: verify the hash, pass only declared secrets,
run in the sandbox, count the use. The daemon's audit event is built from the
returned `RunResult` (name, hash prefix, duration, outcome), never from arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forge.library import IntegrityError, ToolLibrary, ToolNotFound
from forge.runner import RunResult, SandboxRunner


async def call_saved(
    runner: SandboxRunner,
    library: ToolLibrary,
    name: str,
    params: Mapping[str, Any],
    workspace: Path,
    vault: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> RunResult:
    try:
        tool = library.load_verified(name)
    except (IntegrityError, ToolNotFound) as exc:
        return RunResult(False, None, "denied", str(exc))
    vault = vault or {}
    secrets = {k: vault[k] for k in tool.spec.secrets if k in vault}
    result = await runner.run(tool.spec.source, params, workspace, secrets, timeout_s)
    library.record_use(tool.spec.name, result.ok)
    return result

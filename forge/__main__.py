"""Command line: `python -m forge run TOOL.py --workspace DIR --params JSON`,
`python -m forge lint TOOL.py`, `python -m forge capabilities`.

Each sub-command imports what it uses when it runs: `lint` the linter alone (no
asyncio, no sandbox runner); `run` and `capabilities` the runner, which starts a
real sandbox helper (capabilities are what that helper probed)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _print(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


async def _run(source: str, workspace: Path, params: Any, limit_s: float) -> int:
    from forge.runner import SandboxRunner

    runner = SandboxRunner(default_timeout_s=limit_s)
    await runner.start()
    try:
        result = await runner.run(source, params, workspace)
    finally:
        await runner.aclose()
    _print(result.as_json())
    return 0 if result.ok else 1


async def _caps() -> int:
    from forge.runner import SandboxRunner

    runner = SandboxRunner()
    await runner.start()
    caps = runner.capabilities()
    await runner.aclose()
    _print(caps)
    return 0


MAX_TIMEOUT_S = 600.0  # the daemon's own bound on a tool's time ([limits] in roost.toml)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_TIMEOUT_S:g}")
    return value


def workspace_refusal(path: Path, home: Path | None = None) -> str | None:
    """Why `path` (resolved) cannot be a tool's workspace, or None. The tool may read and
    write everything under it, so it must be a folder of its own: not `/`, no folder
    right under `/` (/etc, /tmp, /home...), not the home folder nor one holding it."""
    if not path.is_dir():
        return f"workspace {str(path)!r} is not a directory"
    if path.parent == path or path.parent == Path(path.anchor):
        return f"workspace {str(path)!r} is a system folder: give the tool a folder of its own"
    home = home if home is not None else Path.home().resolve()
    if path == home or home.is_relative_to(path):
        return f"workspace {str(path)!r} holds your home folder: give the tool a folder of its own"
    return None


def _refused(message: str) -> int:
    _print({"ok": False, "result": None, "error": {"kind": "runtime", "message": message}})
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a tool in the sandbox; prints one JSON object")
    run.add_argument("tool", type=Path)
    run.add_argument(
        "--workspace",
        type=Path,
        required=True,
        help="the folder the tool may read and write (relative to the current one)",
    )
    run.add_argument("--params", default="{}")
    run.add_argument(
        "--timeout", type=_seconds, default=5.0, help=f"seconds, at most {MAX_TIMEOUT_S:g}"
    )
    lint_p = sub.add_parser("lint", help="print findings; exit 1 when there are any")
    lint_p.add_argument("tool", type=Path)
    sub.add_parser("capabilities", help="print which sandbox layers this machine offers")
    args = parser.parse_args(argv)
    if args.cmd == "capabilities":
        import asyncio

        return asyncio.run(_caps())
    try:
        source = args.tool.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        sys.stderr.write(f"python -m forge: cannot read {str(args.tool)!r}: {exc}\n")
        return 2
    if args.cmd == "lint":
        from forge.lint import lint

        findings = lint(source)
        for f in findings:
            sys.stdout.write(f"{args.tool}:{f}\n")
        return 1 if findings else 0
    try:
        params = json.loads(args.params)
    except ValueError as exc:
        return _refused(f"--params is not JSON: {exc}")
    workspace = args.workspace.resolve()  # the helper runs in /: never a relative path
    refusal = workspace_refusal(workspace)
    if refusal is not None:
        return _refused(refusal)
    import asyncio

    return asyncio.run(_run(source, workspace, params, args.timeout))


if __name__ == "__main__":
    sys.exit(main())

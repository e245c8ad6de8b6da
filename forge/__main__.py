"""Command line: `python -m forge run TOOL.py --workspace DIR --params JSON`,
`python -m forge lint TOOL.py`, `python -m forge capabilities`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from forge.lint import lint
from forge.runner import SandboxRunner


def _print(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


async def _run(source: str, workspace: Path, params: Any, limit_s: float) -> int:
    runner = SandboxRunner(default_timeout_s=limit_s)
    await runner.start()
    try:
        result = await runner.run(source, params, workspace)
    finally:
        await runner.aclose()
    _print(result.as_json())
    return 0 if result.ok else 1


async def _caps() -> int:
    runner = SandboxRunner()
    await runner.start()
    caps = runner.capabilities()
    await runner.aclose()
    _print(caps)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run a tool in the sandbox; prints one JSON object")
    run.add_argument("tool", type=Path)
    run.add_argument("--workspace", type=Path, required=True)
    run.add_argument("--params", default="{}")
    run.add_argument("--timeout", type=float, default=5.0)
    lint_p = sub.add_parser("lint", help="print findings; exit 1 when there are any")
    lint_p.add_argument("tool", type=Path)
    sub.add_parser("capabilities", help="print which sandbox layers this machine offers")
    args = parser.parse_args(argv)
    if args.cmd == "capabilities":
        return asyncio.run(_caps())
    source = args.tool.read_text("utf-8")
    if args.cmd == "lint":
        findings = lint(source)
        for f in findings:
            sys.stdout.write(f"{args.tool}:{f}\n")
        return 1 if findings else 0
    try:
        params = json.loads(args.params)
    except ValueError as exc:
        _print(
            {
                "ok": False,
                "result": None,
                "error": {"kind": "runtime", "message": f"--params is not JSON: {exc}"},
            }
        )
        return 2
    return asyncio.run(_run(source, args.workspace, params, args.timeout))


if __name__ == "__main__":
    sys.exit(main())

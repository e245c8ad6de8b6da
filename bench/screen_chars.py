"""The secret screen's cost per character, on the texts a turn gives it (issue 26).

Texts with no secret in them, as the recall indexer screens them: 1,500
characters of ordinary English with a code block; the same length with
near-miss shapes (hex hashes, a UUID, a digest, base64, an example AWS key id);
6,000 of each; and 32 chat messages joined by blank lines (the indexer's group).
For each, `secret_kinds` (what the indexer calls) and `screen` (what a memory
write calls, with the injection and invisible-character checks).

Native: median µs per call and per 1,000 characters, with the load average
(the host is shared: compare trees by taking turns). `--callgrind`: the
instructions per call under valgrind, which do not depend on the load: each
text screened `--calls` times and 0 times in fresh interpreters, the
difference divided by `--calls` (so start-up and compiling the rules cancel).

Run: .venv/bin/python -m bench.screen_chars [--quick] [--callgrind] [--calls 40] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from bridge.screening.screen import screen, secret_kinds  # noqa: E402

PROSE = (
    "Thanks for the notes. I looked at the deployment plan again and I think we should move "
    "the database migration to Thursday, after the load test. The new gateway handles retries "
    "itself, so the client code can drop its own loop. Could you check whether the cache keys "
    "still include the tenant id? Last time we forgot it and two tenants saw each other's "
    "previews for an hour. We render the segment together with the linear plan. "
)
CODE = (
    "```python\ndef load_config(path: str) -> dict[str, int]:\n    with open(path) as f:\n"
    "        raw_data = json.load(f)\n    return {k: int(v) for k, v in raw_data.items() if v}\n"
    "```\nRun it with `python -m tools.load --config config.yaml` and set timeout: 30 and "
    "max_retries = 3 in the file (see https://example.com/docs/config#retries). "
)
NEAR = (
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed it; request id "
    "123e4567-e89b-12d3-a456-426614174000, digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
    "2b0b822cd15d6c15b0f00a08 and the blob aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ= was fine; "
    "key_id: AKIAIOSFODNN7EXAMPLE. "
)
MESSAGES = [
    "ok, see you at 10:30",
    "Can you remind me what we decided about the migration?",
    "You decided to move it to Thursday, after the load test; the gateway retries itself.",
    "Right. And the cache keys?",
    "They include the tenant id since last week's fix (commit 3f2a9c1).",
]


def _rep(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def texts() -> dict[str, str]:
    group = "\n\n".join(MESSAGES[i % len(MESSAGES)] for i in range(32))
    return {
        "ordinary 1500": _rep(PROSE * 2 + CODE, 1500),
        "near-miss 1500": _rep(PROSE + NEAR + CODE, 1500),
        "ordinary 6000": _rep(PROSE * 2 + CODE, 6000),
        "near-miss 6000": _rep(PROSE + NEAR + CODE, 6000),
        f"recall group {len(group)}": group,
    }


def _variants(text: str, n: int) -> list[str]:
    """`text` with a number at its end, n times: a new text each call, as in a turn (the
    screen keeps the last texts it folded; the same text again would find them)."""
    return [f"{text} #{i}" for i in range(n)]


CALLS: dict[str, Callable[[str], object]] = {"secret_kinds": secret_kinds, "screen": screen}


def _load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def native(repeat: int, only: str | None) -> None:
    print(f"native, median of {repeat} calls ({_load()})")
    for name, text in texts().items():
        if only and only not in name:
            continue
        for call, fn in CALLS.items():
            fn(text)
            runs = []
            for variant in _variants(text, repeat):
                t0 = time.perf_counter()
                fn(variant)
                runs.append(time.perf_counter() - t0)
            us = statistics.median(runs) * 1e6
            per_k = us * 1000 / len(text)
            print(f"    {name:<20} {call:<13} {us:9.1f} µs  {per_k:8.1f} µs/1000 chars")
    print(f"    ({_load()})")


def _instructions(name: str, call: str, calls: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        cmd = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            sys.executable, "-m", "bench.screen_chars", "--run", name, "--call", call,
            "--calls", str(calls),
        ]  # fmt: skip
        # the same hash seed and no .pyc written: both runs start alike, to the instruction
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {
            **os.environ,
            "PYTHONPATH": path,
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        subprocess.run(cmd, check=True, cwd=ROOT, env=env, capture_output=True)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.M)
        assert found is not None, "no totals in the callgrind output"
        return int(found.group(1))


def callgrind(calls: int, only: str | None) -> None:
    print(f"callgrind, instructions per call ({calls} calls less 0, fresh interpreters)")
    for name, text in texts().items():
        if only and only not in name:
            continue
        for call in CALLS:
            per = (_instructions(name, call, calls) - _instructions(name, call, 0)) / calls
            print(
                f"    {name:<20} {call:<13} {per / 1e6:8.3f} M  "
                f"{per * 1000 / len(text) / 1e6:7.3f} M/1000 chars"
            )


def run_only(name: str, call: str, calls: int) -> None:
    """Inside valgrind: compile the rules (one call on the text), then `calls` calls."""
    fn = CALLS[call]
    text = texts()[name]
    fn(text)
    for variant in _variants(text, calls):
        fn(variant)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="native, 3 calls each (CI: it still runs)")
    ap.add_argument("--only", help="only the texts whose name holds this")
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--call", default="secret_kinds", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run_only(args.run, args.call, args.calls)
    elif args.callgrind:
        callgrind(args.calls, args.only)
    else:
        native(3 if args.quick else args.repeat, args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

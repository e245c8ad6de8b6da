"""Runs every bench script in turn: `python -m bench [--quick] [NAME ...]`.

Each script is a module with a `__main__` block, run as its own process
`python -m bench.NAME` (with `--quick` when given: seconds, tiny sizes, no
thresholds). Prints each script's wall seconds and the total; exits non-zero
when any script failed, after running the rest (so one failure does not hide
another). `make bench` and `make bench-quick` call this.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scripts() -> list[str]:
    """The runnable bench modules: files here with a `__main__` block, by name."""
    return sorted(
        p.stem
        for p in HERE.glob("*.py")
        if not p.stem.startswith("_") and 'if __name__ == "__main__":' in p.read_text()
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="each script's quick mode (CI)")
    ap.add_argument("names", nargs="*", help="only these scripts (default: all)")
    args = ap.parse_args()
    names = args.names or scripts()
    times: list[tuple[str, float, int]] = []
    for name in names:
        cmd = [sys.executable, "-m", f"bench.{name}"] + (["--quick"] if args.quick else [])
        print(f"== {' '.join(cmd[1:])}", flush=True)
        start = time.perf_counter()
        rc = subprocess.run(cmd, cwd=HERE.parent, check=False).returncode
        times.append((name, time.perf_counter() - start, rc))
    print("\n== bench seconds" + (" (--quick)" if args.quick else ""))
    for name, secs, rc in times:
        print(f"{name:<20} {secs:7.1f} s" + ("" if rc == 0 else f"  FAILED (exit {rc})"))
    print(f"{'total':<20} {sum(s for _, s, _ in times):7.1f} s")
    failed = [n for n, _, rc in times if rc != 0]
    if failed:
        print(f"bench: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

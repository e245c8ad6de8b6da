"""The memory screen: refusal rates per public source, and its cost per message.

Rates (no clock involved): for every row of the public corpus
(tests/screening/corpus/, built by make_public_corpus.py from gitleaks' and
trufflehog's rules and tests, providers' formats, deepset/prompt-injections)
and of the seeded corpus (tests/loadout/corpus/), the share refused:
secrets and injections should be refused, harmless and benign text kept.

Cost: median µs per `screen()` call on a short chat message (~60 chars), a
paragraph (~600), a long pasted text (~20 k) and 100 k of adversarial shapes,
each as a ratio to a floor measured in the same run (`str.lower` plus one
compiled-regex scan of the same text), so the figure does not depend on how
fast this machine is today.

Run: .venv/bin/python bench/screen.py        (PYTHONPATH=OLD_TREE to measure another tree)
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from bridge.screening.screen import looks_like_injection, screen  # noqa: E402

PUBLIC = ROOT / "tests" / "screening" / "corpus"
SEEDED = ROOT / "tests" / "loadout" / "corpus"


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def rates(name: str, data: list[dict[str, str]], refused, want_refused: bool) -> tuple[int, int]:
    by: dict[str, list[bool]] = defaultdict(list)
    for r in data:
        source = r.get("source") or "seeded:" + r.get("provider", "?")
        by[source.split(" (")[0]].append(bool(refused(r["text"])))
    hit = sum(sum(v) for v in by.values())
    total = sum(len(v) for v in by.values())
    share = hit / total if total else 0.0
    verb = "refused" if want_refused else "refused (false)"
    print(f"{name:<28} {hit:>4}/{total:<4} {verb} = {share:6.1%}")
    groups: dict[str, list[bool]] = defaultdict(list)
    for source, v in by.items():
        groups[source.split(":")[0]].extend(v)
    for group, v in sorted(groups.items()):
        print(f"    {group:<24} {sum(v):>4}/{len(v):<4} = {sum(v) / len(v):6.1%}")
    if want_refused:
        missed = sorted(s for s, v in by.items() if not all(v))
        if missed:
            print(f"    missed in: {', '.join(missed[:40])}")
    else:
        flagged = sorted(s for s, v in by.items() if any(v))
        if flagged:
            print(f"    flagged in: {', '.join(flagged[:40])}")
    return hit, total


def _median_us(fn, text: str, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs) * 1e6


_FLOOR_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{3}_[A-Za-z0-9]{8,40}")


def floor(text: str) -> None:
    _FLOOR_RE.search(text.lower())


def cost() -> None:
    short = "Remember: my daughter's school starts at 8:15, pick-up Tuesdays at 13:00."
    para = (
        "Notes from the kickoff: the API team moves to the new gateway in March; "
        "tokens rotate monthly through the vault; the staging database is db.internal. "
    ) * 4
    long = (PUBLIC / "benign.jsonl").read_text("utf-8") * 8
    long = long[:20_000]
    adversarial = ("eyJ" * 10_000 + "=_" * 20_000 + "ignore the " * 3_000)[:100_000]
    print("\ncost per message (median µs, ratio to a floor measured now)")
    for name, text, repeat in [
        ("short", short, 400),
        ("paragraph", para, 200),
        ("long 20k", long, 20),
        ("adversarial 100k", adversarial, 5),
    ]:
        base = _median_us(floor, text, repeat)
        took = _median_us(screen, text, repeat)
        print(f"    {name:<18} {len(text):>7} chars  {took:10.1f} µs  x{took / base:8.1f} floor")


def main() -> int:
    print("secret screen (screen() non-empty)")
    rates("public secrets", rows(PUBLIC / "secrets.jsonl"), screen, True)
    rates("public harmless", rows(PUBLIC / "harmless.jsonl"), screen, False)
    rates("seeded secrets", rows(SEEDED / "secrets.jsonl"), screen, True)
    rates("seeded harmless", rows(SEEDED / "harmless.jsonl"), screen, False)
    print("\ninjection screen (looks_like_injection)")
    rates("injections", rows(PUBLIC / "injections.jsonl"), looks_like_injection, True)
    rates("benign", rows(PUBLIC / "benign.jsonl"), looks_like_injection, False)
    cost()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

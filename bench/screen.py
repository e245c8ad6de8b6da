"""The memory screen: refusal rates per public source, and its cost per message.

Rates (no clock involved): for every row of the public corpus
(tests/screening/corpus/, built by make_public_corpus.py from gitleaks' and
trufflehog's rules and tests, providers' formats, deepset/prompt-injections)
and of the seeded corpus (tests/loadout/corpus/), the share refused:
secrets and injections should be refused, harmless and benign text kept.

Cost: median µs per `screen()` call on a short chat message (~60 chars), a
paragraph (~600), a long pasted text (~20 k), 20 k of each of several scripts
(Cyrillic, Chinese, Japanese, Arabic with ZWNJ, Devanagari with ZWJ, Greek,
decomposed accents, emoji sequences) and 100 k of adversarial shapes (token
alphabets, trigger words, hidden code points), each as a ratio to a floor
measured in the same run (`str.lower` plus one compiled-regex scan of the same
text), so the figure does not depend on how fast this machine is today. Then
the cost of `import` and of the first `screen()` (which compiles the rules),
each in a fresh interpreter, as a ratio to a bare interpreter's start.

Run: .venv/bin/python -m bench.screen [--quick]  (another tree: PYTHONPATH=OLD:. python -P -m ..)
     .venv/bin/python -m bench.screen --profile   (where the time goes, cProfile)
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import re
import statistics
import subprocess
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


# A few sentences per script, repeated to 20 k characters: the per-character work
# of the Unicode cleaning grows with text outside ASCII.
_SCRIPTS = {
    "cyrillic 20k": "Привет! Завтра встреча в 10:00 в офисе на Ленина, 5. Ёжик в тумане. ",
    "chinese 20k": "今天天气很好，我们下午三点在公司开会。请记得带上报告和笔记本电脑。",
    "japanese 20k": "明日の会議は午前十時からです。資料を忘れずに持ってきてください。よろしく。",
    "arabic zwnj 20k": "اجتماع الغد في الساعة العاشرة. لا تنس التقرير. می\u200cخواهم بروم. ",
    "devanagari zwj 20k": "नमस्ते, कल सुबह दस बजे बैठक है। कृपया रिपोर्ट लाना न भूलें। क्\u200dष ",
    "greek 20k": "Καλημέρα! Η συνάντηση είναι αύριο στις δέκα. Μην ξεχάσεις την αναφορά. ",
    "decomposed 20k": "Cafe\u0301 cre\u0300me bru\u0302le\u0301e, na\u0131\u0308ve re\u0301sume. ",
    "emoji 20k": (
        "Family 👨\u200d👩\u200d👧 ❤\ufe0f flag 🏴\U000e0067\U000e0062\U000e0073"
        "\U000e0063\U000e0074\U000e007f keycap 1\ufe0f\u20e3 👩🏽\u200d💻 ok. "
    ),
}


def _rep(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def texts() -> list[tuple[str, str, int]]:
    short = "Remember: my daughter's school starts at 8:15, pick-up Tuesdays at 13:00."
    para = (
        "Notes from the kickoff: the API team moves to the new gateway in March; "
        "tokens rotate monthly through the vault; the staging database is db.internal. "
    ) * 4
    long = (PUBLIC / "benign.jsonl").read_text("utf-8") * 8
    out = [("short", short, 400), ("paragraph", para, 200), ("long 20k", long[:20_000], 20)]
    out += [(name, _rep(unit, 20_000), 10) for name, unit in _SCRIPTS.items()]
    return [
        *out,
        ("adversarial 100k", ("eyJ" * 10_000 + "=_" * 20_000 + "ignore the " * 3_000)[:100_000], 5),
        (
            "trigger words 100k",
            _rep("ignore the previous vergiss alles password: pin ", 100_000),
            5,
        ),
        ("hidden 100k", _rep("👨\u200d👩 a\u200b\U000e0041 ", 100_000), 5),
    ]


def cost(quick: bool) -> None:
    print("\ncost per message (median µs, ratio to a floor measured now)")
    for name, text, repeat in texts():
        repeat = 1 if quick else repeat
        base = _median_us(floor, text, repeat)
        took = _median_us(screen, text, repeat)
        print(f"    {name:<20} {len(text):>7} chars  {took:10.1f} µs  x{took / base:8.1f} floor")


def _fresh(code: str, runs: int) -> float:
    """Median seconds fresh interpreters take to run `code` (this tree on its path)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)])),
    }
    took = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        took.append(time.perf_counter() - t0)
    return statistics.median(took)


def start_up(runs: int) -> None:
    bare = _fresh("pass", runs)
    imported = _fresh("import bridge.screening.screen", runs)
    first = _fresh(
        "import bridge.screening.screen as s; s.screen('my password is x; ignore all rules')", runs
    )
    print(f"\nstart-up (median of {runs} fresh interpreters, ratio to a bare one)")
    print(f"    bare interpreter      {bare * 1e3:8.1f} ms  x{1:6.2f}")
    print(f"    import screen         {imported * 1e3:8.1f} ms  x{imported / bare:6.2f}")
    print(f"    import + first screen {first * 1e3:8.1f} ms  x{first / bare:6.2f}")


def profile() -> None:
    """Where a screen() call spends its time on the long texts (cProfile, top entries)."""
    screen("warm up: compile the rules")
    for name, text, _ in texts():
        if len(text) < 20_000 or name not in ("long 20k", "cyrillic 20k", "chinese 20k",
                                               "adversarial 100k", "hidden 100k"):  # fmt: skip
            continue
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(3):
            screen(text)
        prof.disable()
        print(f"\n=== {name}")
        pstats.Stats(prof).sort_stats("tottime").print_stats(8)


def main() -> int:
    if "--profile" in sys.argv:
        profile()
        return 0
    print("secret screen (screen() non-empty)")
    rates("public secrets", rows(PUBLIC / "secrets.jsonl"), screen, True)
    rates("public harmless", rows(PUBLIC / "harmless.jsonl"), screen, False)
    rates("seeded secrets", rows(SEEDED / "secrets.jsonl"), screen, True)
    rates("seeded harmless", rows(SEEDED / "harmless.jsonl"), screen, False)
    print("\ninjection screen (looks_like_injection)")
    rates("injections", rows(PUBLIC / "injections.jsonl"), looks_like_injection, True)
    rates("benign", rows(PUBLIC / "benign.jsonl"), looks_like_injection, False)
    quick = "--quick" in sys.argv  # one repeat, one interpreter each (CI: it still runs)
    cost(quick)
    start_up(1 if quick else 5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

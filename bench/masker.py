"""The vault masker's cost on ordinary and encoded documents: CPU µs per `Masker.mask`.

A tenant with six vault values (ASCII, accented, a URL-ish token, a value
holding a line break) masks: a chat message, 1 MB of prose (the repo's docs,
many short lines), 1 MB of Python source, 1 MB of JSON log lines, 1 MB of
German prose with Windows-1252-ish punctuation, 1 MB of Chinese prose with
fullwidth punctuation (read as ASCII by the masker), 1 MB dense with zero-width
characters and a four-digit value broken by them (every match read joined and mapped
back: linear since session 40, quadratic before), 1 MB of a MIME attachment
(base64 wrapped at 76 columns) and 1 MB of PEM-like text (64 columns). Each
figure is the median CPU time of `--repeat` calls (process time, so another
process's load counts less), with MB/s. No thresholds: compare two trees by
running this in each, alternating (`PYTHONPATH=OTHER python -P -m bench.masker`), or
in one process with `--base OTHER`: OTHER's `bridge/loadout/mask.py` is loaded beside
this tree's (the rest of `bridge` is this tree's) and each call alternates between
them, so both see the same load; it prints both medians and new/base.

Run: .venv/bin/python -m bench.masker [--quick] [--repeat N] [--base OTHER_TREE]
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import statistics
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from bridge.loadout.mask import Masker  # noqa: E402

SECRETS = {
    "API": "Rt5pLm8Qz2Wx7Nv4Kb9J",
    "WIFI": "Grüße-Paßwort-€-42x",
    "DB": "postgres-h0rse-battery",
    "PIN": "8812-4471",
    "NOTE": "line1-Xy7q\nline2  Zk9w",
    "TOKEN": "ghp_" + "a1B2c3D4" * 4,
}
MB = 1_000_000


def _fill(unit: str, n: int) -> str:
    return (unit * (n // max(1, len(unit)) + 1))[:n]


def texts(size: int) -> list[tuple[str, str]]:
    docs = "".join(p.read_text("utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    docs += (ROOT / "README.md").read_text("utf-8")
    code = "".join(p.read_text("utf-8") for p in sorted((ROOT / "bridge" / "core").glob("*.py")))
    log = "".join(
        json.dumps({"ts": 1_800_000_000 + i, "level": "INFO", "msg": f"turn {i} done in 12 ms"})
        + "\n"
        for i in range(2000)
    )
    german = (
        "„Die Straße ist gesperrt“, sagte er – wegen der Bauarbeiten bis 30. März.\n"
        "Größe: 42 m², Preis 1.200 € (zzgl. Nebenkosten); Rückfragen gern per Mail.\n"
    )
    chinese = (  # fullwidth punctuation (U+FF01-U+FF5E) the masker reads as ASCII
        "部署在今天上午十点失败了（第三次），日志显示：连接超时！请检查配置文件。\n"
        "版本号：ｖ２．４．１，负责人：张伟；如有问题，请回复本邮件？谢谢。\n"
    )
    blob = base64.b64encode(os.urandom(size * 3 // 4 + 3)).decode()
    mime = "\r\n".join(textwrap.wrap(blob, 76))
    pem = "\n".join(textwrap.wrap(blob, 64))
    return [
        ("chat message", "Can you check the staging deploy? It failed at 10:42 again."),
        ("prose (docs)", _fill(docs, size)),
        ("python source", _fill(code, size)),
        ("json log lines", _fill(log, size)),
        ("german prose", _fill(german, size)),
        ("chinese prose", _fill(chinese, size)),
        (
            "zero-width dense",
            _fill("pin 8812-44\u200b71, 88\u00ad12-4471 or 8812\u2060-4471. ", size),
        ),
        ("mime base64/76", mime[:size]),
        ("pem base64/64", pem[:size]),
    ]


def cpu_us(masker: Masker, text: str, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.process_time()
        masker.mask(text)
        runs.append(time.process_time() - t0)
    return statistics.median(runs) * 1e6


def base_masker(tree: Path) -> Masker:
    """The masker of `tree`'s `bridge/loadout/mask.py`, loaded beside this tree's."""
    spec = importlib.util.spec_from_file_location(
        "bench_base_mask", tree / "bridge" / "loadout" / "mask.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    masker: Masker = module.Masker(SECRETS)
    return masker


def alternating(new: Masker, base: Masker, size: int, repeat: int) -> None:
    """Each text masked by `base` and `new` in turn; medians of each and new/base."""
    print(f"load {os.getloadavg()[0]:.2f}; median CPU µs of {repeat} calls each, alternating")
    for name, text in texts(size):
        rounds = repeat * 200 if len(text) < 1000 else repeat
        a: list[float] = []
        b: list[float] = []
        for _ in range(rounds):
            a.append(cpu_us(base, text, 1))
            b.append(cpu_us(new, text, 1))
        took_a, took_b = statistics.median(a), statistics.median(b)
        ratio = took_b / took_a if took_a else float("inf")
        print(
            f"    {name:<16} base {took_a:12.1f} µs  new {took_b:12.1f} µs  new/base {ratio:5.2f}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100 kB texts, one call each")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--base", type=Path, help="another tree: alternate with its masker")
    args = ap.parse_args()
    size, repeat = (100_000, 1) if args.quick else (MB, args.repeat)
    masker = Masker(SECRETS)
    if args.base is not None:
        alternating(masker, base_masker(args.base), size, repeat)
        return 0
    print(f"load {os.getloadavg()[0]:.2f}; median CPU µs of {repeat} calls per text")
    for name, text in texts(size):
        rounds = repeat * 200 if len(text) < 1000 else repeat
        took = cpu_us(masker, text, rounds)
        rate = len(text) / took if took else float("inf")
        print(f"    {name:<16} {len(text):>9} chars {took:12.1f} µs {rate:8.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

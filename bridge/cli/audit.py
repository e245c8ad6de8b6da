"""`roost audit verify` and `roost audit tail`: parser and runner for bridge/cli.py.

Exit codes of verify: 0 intact, 1 a violation (first bad record and kind
printed), 2 the chain or its key cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bridge.audit.keys import HmacKeyError, load_hmac_key
from bridge.audit.verify import tail, verify


def chain_path(home: Path) -> Path:
    return home / "audit" / "chain.jsonl"


def add_audit_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    configure_audit_parser(subparsers.add_parser("audit", help="verify or read the audit chain"))


def configure_audit_parser(audit: argparse.ArgumentParser) -> None:
    """`verify` and `tail [-n N] [--type T] [--tenant T] [--json]` under `audit`."""
    sub = audit.add_subparsers(dest="audit_command", required=True)
    sub.add_parser("verify", help="check every record, link, MAC and the head")
    t = sub.add_parser("tail", help="show recent events")
    t.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    t.add_argument("--type", dest="event_type", help="only this event type")
    t.add_argument("--tenant", help="only this tenant")
    t.add_argument("--json", action="store_true", help="print raw records")


def format_record(rec: dict[str, object]) -> str:
    ts = rec.get("ts")
    when = (
        datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
        if isinstance(ts, int)
        else "?"
    )
    details = json.dumps(rec.get("details"), sort_keys=True, separators=(",", ":"))
    return f"{rec.get('seq')}\t{when}\t{rec.get('event')}\t{rec.get('tenant') or '-'}\t{details}"


def run_audit_command(
    args: argparse.Namespace,
    home: Path,
    hmac_key_path: Path | None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    path = chain_path(home)
    if args.audit_command == "tail":
        try:
            records = tail(path, args.n, args.event_type, args.tenant)
        except OSError as exc:
            print(f"audit: cannot read {path}: {exc.strerror}", file=err)
            return 2
        for rec in records:
            out.write((json.dumps(rec, sort_keys=True) if args.json else format_record(rec)) + "\n")
        return 0
    try:
        key = load_hmac_key(hmac_key_path, path.parent)
        result = verify(path, key)
    except HmacKeyError as exc:
        print(f"audit: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"audit: cannot read {path}: {exc.strerror}", file=err)
        return 2
    keyed = "with HMAC key" if key is not None else "without HMAC key"
    if result.ok:
        print(f"audit chain intact: {result.records} records ({keyed})", file=out)
        return 0
    print(
        f"audit chain violation: {result.kind} at record {result.first_bad_seq}: "
        f"{result.message} ({result.records} records verified before it, {keyed})",
        file=out,
    )
    return 1

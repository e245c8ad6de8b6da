"""`roost audit verify` and `roost audit tail`: a table of two verbs over the chain file.

Exit codes of verify: 0 intact, 1 a violation (first bad record and kind
printed), 2 the chain or its key cannot be read. Tail exits 2 when the chain
cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bridge.app.home import chain_path
from bridge.audit.keys import HmacKeyError, load_hmac_key
from bridge.audit.verify import tail, verify
from bridge.cli.rows import Verb, add_verbs, no_args, pick
from bridge.core.config import Settings
from bridge.core.words import count

# (args, chain file, HMAC key file or None, out, err) -> exit status
AuditRun = Callable[[argparse.Namespace, Path, Path | None, TextIO, TextIO], int]


def tail_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    p.add_argument("--type", dest="event_type", help="only this event type")
    p.add_argument("--tenant", help="only this tenant")
    p.add_argument("--json", action="store_true", help="print raw records")


def format_record(rec: dict[str, object]) -> str:
    ts = rec.get("ts")
    when = (
        datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
        if isinstance(ts, int)
        else "?"
    )
    details = json.dumps(rec.get("details"), sort_keys=True, separators=(",", ":"))
    return f"{rec.get('seq')}\t{when}\t{rec.get('event')}\t{rec.get('tenant') or '-'}\t{details}"


def run_tail(
    args: argparse.Namespace, path: Path, key_path: Path | None, out: TextIO, err: TextIO
) -> int:
    try:
        records = tail(path, args.n, args.event_type, args.tenant)
    except OSError as exc:
        print(f"audit: cannot read {path}: {exc.strerror}", file=err)
        return 2
    for rec in records:
        out.write((json.dumps(rec, sort_keys=True) if args.json else format_record(rec)) + "\n")
    return 0


def run_verify(
    args: argparse.Namespace, path: Path, key_path: Path | None, out: TextIO, err: TextIO
) -> int:
    try:
        key = load_hmac_key(key_path, path.parent)
        result = verify(path, key)
    except HmacKeyError as exc:
        print(f"audit: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"audit: cannot read {path}: {exc.strerror}", file=err)
        return 2
    keyed = "with HMAC key" if key is not None else "without HMAC key"
    if result.ok:
        print(f"audit chain intact: {count(result.records, 'record')} ({keyed})", file=out)
        return 0
    print(
        f"audit chain violation: {result.kind} at record {result.first_bad_seq}: "
        f"{result.message} ({count(result.records, 'record')} verified before it, {keyed})",
        file=out,
    )
    return 1


VERBS: tuple[Verb[AuditRun], ...] = (
    Verb("verify", "check every record, link, MAC and the head", no_args, run_verify),
    Verb("tail", "show recent events", tail_args, run_tail),
)


def audit_args(p: argparse.ArgumentParser) -> None:
    """`verify` and `tail [-n N] [--type T] [--tenant T] [--json]` under `audit`."""
    add_verbs(p, "audit_command", VERBS)


def add_audit_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """`audit` with its verbs on a parser of the caller's (tests build a bare one)."""
    audit_args(subparsers.add_parser("audit", help="verify or read the audit chain"))


def run_audit_command(
    args: argparse.Namespace,
    home: Path,
    hmac_key_path: Path | None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    run = pick(VERBS, args.audit_command)
    return run(args, chain_path(home), hmac_key_path, out or sys.stdout, err or sys.stderr)


def run_audit(args: argparse.Namespace, settings: Settings) -> int:
    return run_audit_command(args, settings.home, settings.audit_hmac_key_file)

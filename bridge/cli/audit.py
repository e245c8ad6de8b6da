"""`roost audit verify` and `roost audit tail`: a table of two verbs over the chain files.

A home has one chain, or one per instance when several instances share it
(`bridge.audit.chains`); both verbs take every chain. Exit codes of verify:
0 every chain intact, 1 a violation in any (its first bad record and kind
printed, per chain), 2 a chain, its folder or the key cannot be read. Tail merges
the chains by time and exits 2 when a chain cannot be read; a negative `-n` is
refused (exit 2).
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from bridge.app.home import chain_path, chain_paths
from bridge.audit.chains import instance_of, label
from bridge.audit.keys import HmacKeyError, load_hmac_key
from bridge.audit.verify import tail, verify
from bridge.cli.rows import Verb, add_verbs, no_args, pick
from bridge.core.config import Settings
from bridge.core.words import count

# (args, chain files, HMAC key file or None, out, err) -> exit status
AuditRun = Callable[[argparse.Namespace, list[Path], Path | None, TextIO, TextIO], int]


def count_arg(value: str) -> int:
    """argparse type of `tail -n`: a whole number, 0 or more."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give 0 or more events")
    return n


def event_arg(value: str) -> str:
    """`--type`: an event roost records (bridge/audit/catalogue.py); a typo matched nothing
    and printed nothing, exit 0, as if no such event had happened (s46 newcomer)."""
    from difflib import get_close_matches

    from bridge.audit.catalogue import EVENTS

    if value in EVENTS:
        return value
    close = get_close_matches(value, list(EVENTS), n=3)
    like = f"did you mean {', '.join(close)}? " if close else ""
    raise argparse.ArgumentTypeError(
        f"{value!r} is not an event roost records: {like}docs/audit.md lists them"
    )


def tail_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=count_arg, default=20, help="how many events (default 20)")
    p.add_argument(
        "--type", dest="event_type", type=event_arg, help="only this event type (docs/audit.md)"
    )
    p.add_argument("--tenant", help="only this tenant")
    p.add_argument("--json", action="store_true", help="print raw records")


def format_record(rec: dict[str, object], instance: str | None = None) -> str:
    """One line of `tail`; the record's sequence number is prefixed with its instance's
    name when the home has several chains."""
    ts = rec.get("ts")
    when = (
        datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
        if isinstance(ts, int)
        else "?"
    )
    details = json.dumps(rec.get("details"), sort_keys=True, separators=(",", ":"))
    seq = f"{instance}:{rec.get('seq')}" if instance else f"{rec.get('seq')}"
    return f"{seq}\t{when}\t{rec.get('event')}\t{rec.get('tenant') or '-'}\t{details}"


def run_tail(
    args: argparse.Namespace, paths: list[Path], key_path: Path | None, out: TextIO, err: TextIO
) -> int:
    named = len(paths) > 1
    chains: list[list[tuple[int, dict[str, object], str | None]]] = []
    for path in paths:
        try:
            records = tail(path, args.n, args.event_type, args.tenant)
        except OSError as exc:
            print(f"audit: cannot read {path}: {exc.strerror}", file=err)
            return 2
        instance = (instance_of(path) or "-") if named else None
        chains.append([(_ts(rec), rec, instance) for rec in records])
    # each chain keeps its own order; the chains interleave by their records' times
    merged = list(heapq.merge(*chains, key=lambda m: m[0]))
    for _ts_ms, rec, instance in merged[-args.n :] if args.n > 0 else []:
        if args.json:
            line = json.dumps(rec | ({"instance": instance} if named else {}), sort_keys=True)
        else:
            line = format_record(rec, instance)
        out.write(line + "\n")
    return 0


def _ts(rec: dict[str, object]) -> int:
    ts = rec.get("ts")
    return ts if isinstance(ts, int) else 0


def run_verify(
    args: argparse.Namespace, paths: list[Path], key_path: Path | None, out: TextIO, err: TextIO
) -> int:
    status = 0
    for path in paths:
        named = f"{label(path)}: " if len(paths) > 1 else ""
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
            print(
                f"{named}audit chain intact: {count(result.records, 'record')} ({keyed})",
                file=out,
            )
            continue
        print(
            f"{named}audit chain violation: {result.kind} at record {result.first_bad_seq}: "
            f"{result.message} ({count(result.records, 'record')} verified before it, {keyed})",
            file=out,
        )
        status = 1
    return status


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
    try:
        found = chain_paths(home)
    except OSError as exc:  # the home or audit/ is not this user's to read
        print(f"audit: cannot read {home / 'audit'}: {exc.strerror or exc}", file=err or sys.stderr)
        return 2
    # no chain yet: the single chain's path, so the operator reads which file is missing
    paths = found or [chain_path(home)]
    return run(args, paths, hmac_key_path, out or sys.stdout, err or sys.stderr)


def run_audit(args: argparse.Namespace, settings: Settings) -> int:
    return run_audit_command(args, settings.home, settings.audit_hmac_key_file)

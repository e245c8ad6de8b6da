"""`roost doctor`: one line per health check (ok / warn / FAIL and why); exit 1 on any FAIL.

A configuration that does not load stops it before any check (`bridge.cli.main`:
the configuration's one message, exit 78), as it stops every command.

Checks, in order: the configuration loads (and `roost serve` would take it:
the same checks its channels make, e.g. a Telegram webhook needs a URL); the
home (not made yet: a warning, the first start makes it; a file: a FAIL) and
everything in it is private (directories 0700, files 0600: no group or other bits; the
home itself open, as `mkdir` makes it: a warning with the `chmod`, every start tightens
it, unless another user owns it: a FAIL); the
database, through the `Database` protocol: it opens, its schema step is the
one this roost knows (behind: a warning, `roost serve` migrates it; ahead: a
FAIL, an older roost on a newer home), and on SQLite `PRAGMA quick_check`
passes (on PostgreSQL the server keeps its own pages; the check says whether
data checksums are on); with `[database] url`, a `postgresql` line (the server
answers, its schema version, live `[cluster]` instances; the URL without its
password); pairings to tenants this configuration does not have (a warning naming
them and `roost access revoke`: they are kept and ignored, see
`bridge.core.pairing.warn_unconfigured`); the audit chain verifies (a keyed chain
checked without the key: a warning); each model's
server (`[llm]`: the `backend` line; `[models.X]`: a `model:X` line) answers
with its model list and then one chat request (a server whose list needs no
key, as llama.cpp's, would pass a wrong key: the chat request says so, a
FAIL naming the key setting; a model not listed whose chat request fails
too is a FAIL, naming the default model when `model` is unset); the
Telegram Bot API knows the token
and the webhook state; a WhatsApp or Matrix section with some of the keys its
channel needs but not all (FAIL: `roost serve` leaves that channel off); the
sandbox layers forge can use (Landlock ABI, seccomp, via `python -m forge
capabilities`, a child process started first that runs beside the other checks);
free disk space under the home (warn below 1 GiB, FAIL below
100 MiB); a `roost forget` that was interrupted (FAIL: the tenant's files may
still be there). Nothing is created or repaired; the network checks live in `bridge.cli.doctor_net`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import re
import shutil
import stat
import sys
from pathlib import Path
from typing import TextIO

from bridge.app.channel_config import half_configured
from bridge.app.database import open_existing, open_reachable
from bridge.app.forget_marks import pending
from bridge.app.home import chain_paths
from bridge.audit.chains import label
from bridge.audit.keys import HmacKeyError, load_hmac_key
from bridge.audit.store import ChainCorrupt, head_path, read_head
from bridge.audit.verify import verify
from bridge.cli.doctor_net import Check, check_models, check_telegram
from bridge.core.config import ConfigError, Settings, config_path, config_source
from bridge.core.config_sections import LLMSettings
from bridge.core.pairing import PairingStore
from bridge.core.tenants import configured_tenants
from bridge.core.words import count
from bridge.storage.errors import StorageError
from bridge.storage.protocol import Database
from bridge.storage.schema import MIGRATIONS
from bridge.types.file_tree import TreeChanged, walk

GIB, MIB = 1 << 30, 1 << 20
WARN_FREE, FAIL_FREE = 1 * GIB, 100 * MIB
SANDBOX_LAYERS = ("landlock", "seccomp")


def check_config(settings: Settings) -> Check:
    path, named = config_path(os.environ)
    source = str(path) if path.exists() else f"no file at {path}: defaults and environment"
    if named and not path.exists():
        return Check("FAIL", "config", f"ROOST_CONFIG names {path}, which does not exist")
    refused = serve_refusal(settings)
    if refused is not None:
        return Check("FAIL", "config", f"loaded ({source}), but `roost serve` refuses: {refused}")
    return Check("ok", "config", f"loaded ({source}); {count(len(settings.tenants), 'tenant')}")


def serve_refusal(settings: Settings) -> str | None:
    """What `roost serve` would stop on in this configuration before its channels start
    (the tenants' `<platform>_ids` lists, bridge.app.channels_up and the Telegram
    webhook's own check, reused), or None."""
    from bridge.app.channels_up import PLATFORMS
    from bridge.core.identities import identity_map

    try:
        identity_map(settings.tenants, PLATFORMS)  # as `roost serve` does before all else
    except ConfigError as exc:
        return str(exc)
    tg, web_on = settings.telegram, settings.web.enabled
    if tg.token is not None and tg.mode == "webhook":
        if not web_on:
            return "telegram.mode 'webhook' needs the web server (web.enabled = true)"
        from bridge.channels.telegram.webhook import webhook_secret  # the telegram library

        try:
            webhook_secret(tg)
        except ConfigError as exc:
            return str(exc)
    if settings.whatsapp.enabled and not web_on:
        return "whatsapp needs the web server (web.enabled = true) for its webhook"
    return None


def _loose(home: Path) -> list[str]:
    """Paths under `home` (not itself) readable or writable by group or others (any
    depth: `file_tree.walk`); a folder that cannot be read is named too."""
    found = []
    skipped: list[tuple[str, OSError]] = []
    try:
        for entry in walk(home, skipped=skipped):
            mode = entry.st.st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found.append(f"{_short(entry.rel)} {stat.S_IMODE(mode):04o}")
    except TreeChanged:
        found.append("(a folder was moved while it was checked: run `roost doctor` again)")
    found += [f"{_short(rel)} (unreadable: {exc.strerror})" for rel, exc in skipped]
    return found


def _short(rel: str) -> str:
    return rel if len(rel) <= 120 else f"{rel[:80]}...{rel[-30:]}"


def check_home(home: Path) -> Check:
    if not home.is_dir():
        if home.exists() or home.is_symlink():
            return Check(
                "FAIL",
                "home",
                f"{home} is not a directory (a file or a broken link): roost cannot keep its "
                "state there; point ROOST_HOME at a folder (or remove what is there)",
            )
        return Check("warn", "home", f"{home} does not exist yet (created on first start)")
    own = os.stat(home)  # a home reached through a link: its folder's mode
    mode = stat.S_IMODE(own.st_mode)
    loose = _loose(home)
    if loose:
        loose = ([f"the home {mode:04o}"] if mode & 0o077 else []) + loose
        shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
        return Check("FAIL", "home", f"open to group/others: {shown} (want dirs 0700, files 0600)")
    if mode & 0o077:
        return loose_home(home, mode, own.st_uid)
    return Check("ok", "home", f"{home}: 0700, files 0600")


def loose_home(home: Path, mode: int, owner: int) -> Check:
    """A home open to others, with nothing loose inside (a home made with `mkdir`): every
    start tightens it to 0700 (`bridge.app.home.prepare_home`), so a warning with the fix,
    unless it belongs to another user (then roost cannot chmod it: a FAIL)."""
    if owner != os.geteuid():
        return Check(
            "FAIL",
            "home",
            f"open to group/others: the home {mode:04o}, and it belongs to uid {owner}, not "
            f"to this user (uid {os.geteuid()}), so roost cannot tighten it: run roost as its "
            f"owner, or `sudo chown {os.geteuid()} {home}` and `chmod 700 {home}`",
        )
    return Check(
        "warn",
        "home",
        f"the home {mode:04o} is open to group/others: roost tightens it to 0700 at its next "
        f"start, or run `chmod 700 {home}` now",
    )


SQLITE_MAGIC = b"SQLite format 3\x00"
NOT_SQLITE = "file is not a database"  # as SQLite says it


def no_database(path: Path) -> Check | None:
    if path.exists():
        return None
    return Check("warn", "database", "no roost.db yet (created on first start)")


async def check_database(path: Path) -> Check:
    """The home's existing roost.db, opened as it is (nothing created, migrated or
    repaired)."""
    # SQLite reads page 1 from the WAL while one is left (a daemon running, or one that was
    # killed), so a clobbered header can open cleanly: look at the file itself first
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        return Check("FAIL", "database", f"{path.name}: cannot read it ({exc.strerror})")
    if header and header != SQLITE_MAGIC:
        return Check("FAIL", "database", f"{path.name}: {NOT_SQLITE}; restore it from a backup")
    try:
        db = await open_existing(path)
    except StorageError as exc:
        return Check("FAIL", "database", f"{path.name}: {exc}; restore it from a backup")
    except OSError as exc:  # e.g. a read-only home: SQLite needs to write beside the file
        return Check(
            "FAIL",
            "database",
            f"{path.name}: cannot open it ({exc.strerror}); roost needs its home writable",
        )
    try:
        return await database_check(db)
    finally:
        await db.aclose()


async def database_check(db: Database) -> Check:
    """Schema step and integrity of `db` (SQLite: quick_check; PostgreSQL: the server's
    data checksums), through the protocol."""
    known = MIGRATIONS[-1].version
    try:
        version = await db.version()
        if db.dialect.name == "sqlite":
            rows = [str(r[0]) for r in await db.fetch_all("PRAGMA quick_check")]
            if rows != ["ok"]:
                return Check(
                    "FAIL", "database", f"quick_check: {rows[0]}; restore it from a backup"
                )
            health = "quick_check ok"
        else:
            sums = await db.fetch_value("SHOW data_checksums")
            health = f"PostgreSQL, data checksums {sums}"
    except StorageError as exc:
        return Check("FAIL", "database", f"{exc}; restore it from a backup")
    if version > known:
        return Check(
            "FAIL",
            "database",
            f"schema step {version}, newer than this roost knows ({known}): run the roost "
            "that last served this home",
        )
    if version < known:
        return Check(
            "warn", "database", f"{health}; schema step {version} of {known} (roost serve migrates)"
        )
    return Check("ok", "database", f"{health}; schema step {version}")


async def check_pairings(settings: Settings, timeout_s: float) -> list[Check]:
    """A warning naming the tenants with pairings this configuration does not configure
    (kept and ignored: `roost access list` marks them, each start logs them) and the
    command that removes them; nothing when there are none, or when the database cannot
    be read (its own line says why)."""
    db: Database
    try:
        if settings.database.url is not None:
            db = await open_reachable(settings.database, timeout_s)
        elif (settings.home / "roost.db").is_file():
            db = await open_existing(settings.home / "roost.db")
        else:
            return []
    except (ConfigError, StorageError, OSError):
        return []
    try:
        bound = await PairingStore(db).bindings()
    except StorageError:  # damaged, or a schema before pairings: the database line says
        return []
    finally:
        await db.aclose()
    known = configured_tenants(settings.tenants, settings.local_tenant)
    stale = [b for b in bound if b.tenant not in known]
    if not stale:
        return []
    tenants = sorted({b.tenant for b in stale})
    return [
        Check(
            "warn",
            "pairing",
            f"{count(len(stale), 'binding')} to tenants {config_source(os.environ)} does not"
            f" configure ({', '.join(tenants)}) ignored (roost access list); if that is the"
            " service's configuration and they were removed on purpose: roost access revoke"
            f" {tenants[0] if len(tenants) == 1 else 'TENANT (each)'}",
        )
    ]


def check_audit(settings: Settings) -> Check:
    """Every chain of the home (one per instance when several share it) verified."""
    paths = chain_paths(settings.home)
    if not paths:
        return Check("warn", "audit", "no audit chain yet (created on first start)")
    records = 0
    key: bytes | None = None
    for path in paths:
        named = f"{label(path)}: " if len(paths) > 1 else ""
        try:
            key = load_hmac_key(settings.audit_hmac_key_file, path.parent)
            result = verify(path, key)
        except HmacKeyError as exc:
            return Check("FAIL", "audit", f"HMAC key: {exc}")
        except OSError as exc:
            return Check("FAIL", "audit", f"cannot read {path}: {exc.strerror}")
        if not result.ok:
            return Check(
                "FAIL",
                "audit",
                f"{named}{result.kind} at record {result.first_bad_seq}: {result.message} "
                "(roost audit verify)",
            )
        records += result.records
    keyed = "with HMAC key" if key is not None else "without HMAC key"
    chains = f" in {count(len(paths), 'chain')}" if len(paths) > 1 else ""
    intact = f"chain intact: {count(records, 'record')}{chains}"
    if key is None and any(_keyed(path) for path in paths):
        return Check(
            "warn",
            "audit",
            f"{intact}, but it is keyed and no HMAC key is set: its MACs were not checked "
            "and a command that writes it refuses (set ROOST_AUDIT_HMAC_KEY_FILE)",
        )
    return Check("ok", "audit", f"{intact} ({keyed})")


def _keyed(chain: Path) -> bool:
    """Whether the chain's head carries a MAC (it was written with the HMAC key)."""
    try:
        head = read_head(head_path(chain))
    except (ChainCorrupt, OSError):
        return False
    return head is not None and "mac" in head


class _Hush(logging.Filter):
    """Drops every record: the probe's runner says what it lacks in the check's line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


async def check_sandbox(timeout_s: float = 60.0) -> Check:
    """forge's own probe: a sandbox helper started as the daemon starts its own (a process
    of its own, on a core of its own) says what the machine offers, and is closed. In this
    process, not a `python -m forge capabilities` child that would start the helper: that
    interpreter and its imports were ~0.2 s of CPU more a run (as many as the helper)."""
    from forge.runner import SandboxRunner  # the runner's chain: only for this check

    quiet, hush = logging.getLogger("forge.runner"), _Hush()
    quiet.addFilter(hush)  # its "layer unavailable" warnings: said once, in the line
    runner = SandboxRunner()
    try:
        await asyncio.wait_for(runner.start(), timeout_s)
        caps = runner.capabilities()
    except Exception as exc:  # any helper that does not say hello: the check's FAIL
        return Check("FAIL", "sandbox", f"no sandbox helper answered: {exc or 'timed out'}")
    finally:
        quiet.removeFilter(hush)
        await asyncio.shield(runner.aclose())  # also when the doctor stops early
    parts = [f"{n} {caps.get(n, {}).get('detail', '?')}" for n in SANDBOX_LAYERS]
    missing = [n for n, c in caps.items() if isinstance(c, dict) and not c.get("available")]
    if missing:
        return Check("warn", "sandbox", f"{', '.join(parts)}; unavailable: {', '.join(missing)}")
    return Check("ok", "sandbox", ", ".join(parts))


def disk_check(free: int) -> Check:
    """FAIL below 100 MiB free, warn below 1 GiB."""
    text = f"{free / GIB:.1f} GiB free" if free >= GIB else f"{free // MIB} MiB free"
    if free < FAIL_FREE:
        return Check("FAIL", "disk", f"{text}: roost cannot save state; free some space")
    if free < WARN_FREE:
        return Check("warn", "disk", f"{text} (under 1 GiB)")
    return Check("ok", "disk", text)


def check_forgetting(home: Path) -> Check | None:
    """FAIL when a `roost forget` was interrupted (its marker stands); None otherwise."""
    left = pending(home)
    if not left:
        return None
    names = ", ".join(left)
    return Check(
        "FAIL",
        "forget",
        f"unfinished for {names}: files may remain and nothing is served to "
        f"{'them' if len(left) > 1 else 'it'}; run `roost forget --tenant {left[0]} --yes` "
        "again to finish",
    )


async def check_postgres(settings: Settings, timeout_s: float) -> list[Check]:
    """With `[database] url`: the server answers, its schema version, live instances."""
    from bridge.app.database import postgres_status

    if settings.database.url is None:
        return []
    try:
        status, reason = await postgres_status(settings.database, timeout_s)
    except ConfigError as exc:
        return [Check("FAIL", "postgresql", str(exc))]
    return [Check(status, "postgresql", reason)]


def check_channels(settings: Settings) -> list[Check]:
    """A FAIL per chat platform whose section is partly written (`roost serve` leaves it
    off: a token without a phone number id, a homeserver without its account)."""
    return [Check("FAIL", name, f"off: {what}") for name, what in half_configured(settings)]


async def checks(settings: Settings, timeout_s: float) -> list[Check]:
    """Every check, in the order the report lists them. The sandbox probe (a child
    process and its helper: most of the command's CPU) runs beside the checks before it,
    on a core of its own; its line keeps its place."""
    sandbox = asyncio.create_task(check_sandbox())
    try:
        return await _checks(settings, timeout_s, sandbox)
    finally:
        if not sandbox.done():  # a check before it failed: the probe is not left behind
            sandbox.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sandbox


async def _checks(
    settings: Settings, timeout_s: float, sandbox: asyncio.Task[Check]
) -> list[Check]:
    home = settings.home
    path = home / "roost.db"
    found = [check_config(settings), check_home(home)]
    found.append(no_database(path) or await check_database(path))
    found += await check_postgres(settings, timeout_s)
    found += await check_pairings(settings, timeout_s)
    found.append(check_audit(settings))
    unfinished = check_forgetting(home)
    found += [unfinished] if unfinished is not None else []
    found += await check_models_answer(settings, timeout_s)
    found += await check_telegram(settings, timeout_s)
    found += check_channels(settings)
    found.append(await sandbox)
    where = home
    while not where.exists() and where != where.parent:  # not made yet: the disk it goes on
        where = where.parent
    found.append(disk_check(shutil.disk_usage(where).free))
    return found


LISTED = re.compile(r" among them$| not listed \(")


def _models(settings: Settings) -> list[tuple[str, LLMSettings]]:
    """The sections `check_models` reports on, in its order."""
    return [("llm", settings.llm)] + [
        (f"models.{name}", llm) for name, llm in sorted(settings.models.items())
    ]


async def check_models_answer(settings: Settings, timeout_s: float) -> list[Check]:
    """`check_models`, then for each server whose `GET /models` answered a list (it may
    need no key, as llama.cpp's does) one chat request, as a turn sends it: a rejected
    key is a FAIL naming the key setting; any other failure fails a listed model."""
    found = await check_models(settings, timeout_s)
    sections = _models(settings)
    asked = [
        (n, section, llm)
        for n, (check, (section, llm)) in enumerate(zip(found, sections, strict=False))
        if check.status in ("ok", "warn") and LISTED.search(check.reason)
    ]
    answers = await asyncio.gather(*(_chat(llm, timeout_s, section) for _, section, llm in asked))
    for (n, section, llm), failed in zip(asked, answers, strict=True):
        check = found[n]
        where = check.reason.split(": ", 1)[0]
        if failed is None:
            if check.status == "ok":
                found[n] = check._replace(reason=f"{check.reason}; a chat request was answered")
            else:  # not listed, yet it answers (an alias): the warning names whose name it is
                reason = f"{_named(check.reason, section, llm)}; a chat request was answered"
                found[n] = check._replace(reason=reason)
            continue
        key = llm.api_key.get_secret_value().strip() if llm.api_key else ""
        if failed.startswith("auth"):
            http = re.search(r"HTTP \d+", failed)
            env = "ROOST_" + section.upper().replace(".", "__") + "__API_KEY"
            reason = (
                f"{where}: GET /models answered, but the server refused a chat request"
                f"{f' ({http[0]})' if http else ''}: the API key was rejected; check "
                f"{section}.api_key ({env})"
            )
        elif check.status == "ok":
            reason = f"{where}: {llm.model} is listed, but a chat request failed, {failed}"
        else:  # not listed, and asking it fails too: every turn would fail the same way
            reason = (
                f"{_named(check.reason, section, llm)}; a chat request to it failed too, {failed}"
            )
        found[n] = Check("FAIL", check.name, reason.replace(key, "***") if key else reason)
    return found


def _named(reason: str, section: str, llm: LLMSettings) -> str:
    """`check_models`' "model X not listed" line, saying "(llm.model is unset: the default)"
    after X when nobody wrote the model's name (a newcomer never typed gpt-4o-mini)."""
    if "model" in llm.model_fields_set:
        return reason
    said, unset = f"model {llm.model}", f"({section}.model is unset: the default)"
    return reason.replace(f"{said} not listed", f"{said} {unset} not listed", 1)


async def _chat(llm: LLMSettings, timeout_s: float, section: str) -> str | None:
    """The chat probe of `section` ("llm" or "models.NAME"): its failure names that
    table's settings (a [models.smart] model the server lacks once said ROOST_LLM__MODEL)."""
    from bridge.cli.doctor_chat import probe_chat  # the backends: only when a server answered

    table = section.removeprefix("models.") if section.startswith("models.") else None
    return await probe_chat(llm, timeout_s, table)


def report(found: list[Check], out: TextIO) -> int:
    width = max([9, *(len(c.name) for c in found)])  # model:<name> lines may be longer
    for c in found:
        print(f"{c.status:<4}  {c.name:<{width}} {c.reason}", file=out)
    return 1 if any(c.status == "FAIL" for c in found) else 0


def seconds(value: str) -> float:
    """`--timeout`: a finite number of seconds above 0 (-1 or 0 made every network check
    fail at once, blamed on the server)."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not (0 < number < math.inf):
        raise argparse.ArgumentTypeError(
            f"{value} is not above 0: give the seconds each network check may wait, e.g. 5"
        )
    return number


def doctor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout", type=seconds, default=5.0, help="seconds per network check (above 0)"
    )


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    return report(asyncio.run(checks(settings, args.timeout)), sys.stdout)

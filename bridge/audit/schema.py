"""Per-event field schemas: what the audit writer lets into a record's details.

One table, `SCHEMAS`, names every event and, per field, the kind of value it
may hold: a member of a declared enum, an integer, a bool, a lowercase hex
digest, a roost- or platform-made id of a fixed pattern, or a *name* a person
or a model chose (a memory topic, a tool, a skill, a secret, a profile key),
which is never stored: the writer replaces it by a content-free keyed id,
`n-` + 16 hex of HMAC-SHA256(names key, kind NUL tenant NUL name).

The channel enum and the identity and message-id patterns come from the
platforms' declarations (`schemas_for(platforms)`, `bridge.types.platform`):
a chain opened by the app keeps exactly the channels its registry names.

`sanitize()` keeps a field only when its value fits its kind. A field whose
value does not fit is dropped and its (schema-declared) name listed under
`_dropped`; a field the schema does not declare is dropped and only counted
under `_unknown` (its name may itself be text). Nothing else is ever written.

Every check is linear in its input by construction: an id or enum string is
length-checked before any pattern sees it (patterns only ever read at most
`MAX_ID` characters), a name is hashed once, a list is length-checked before
its items are.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from bridge.types.platform import Platform

MAX_ID = 64
MAX_ITEMS = 64
MAX_INT = 2**53
NAME_ID_RE = re.compile(r"n-[0-9a-f]{16}")

Namer = Callable[[str, str | None, str], str]


class Drop(Exception):
    """The value does not fit its field's kind; it is not written."""


NAMER_MEMO = 4096  # ids a namer keeps (a turn names its chat and channel each time)


def keyed_namer(key: bytes) -> Namer:
    """A namer over `key`: the same (kind, tenant, name) always gives the same id,
    remembered for the last few thousand names (in memory only, like the key)."""
    memo: dict[tuple[str, str | None, str], str] = {}

    def name_id(kind: str, tenant: str | None, name: str) -> str:
        found = memo.get((kind, tenant, name))
        if found is not None:
            return found
        msg = f"{kind}\0{tenant or ''}\0{name}".encode("utf-8", "surrogatepass")
        ident = "n-" + hmac.digest(key, msg, "sha256")[:8].hex()
        if len(memo) >= NAMER_MEMO:
            memo.clear()
        memo[(kind, tenant, name)] = ident
        return ident

    return name_id


class Kind:
    """One kind of field value."""

    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        raise NotImplementedError

    def admits(self, stored: str) -> bool:
        """Whether `stored` (a string found in a written record) fits this kind."""
        raise NotImplementedError


@dataclass(frozen=True)
class Enum(Kind):
    values: frozenset[str]

    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) is str and len(value) <= MAX_ID and value in self.values:
            return value
        raise Drop

    def admits(self, stored: str) -> bool:
        return stored in self.values


@dataclass(frozen=True)
class Int(Kind):
    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) is int and -MAX_INT < value < MAX_INT:
            return value
        raise Drop

    def admits(self, stored: str) -> bool:
        return False


@dataclass(frozen=True)
class Bool(Kind):
    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) is bool:
            return value
        raise Drop

    def admits(self, stored: str) -> bool:
        return False


@dataclass(frozen=True)
class Ref(Kind):
    """A roost- or platform-made id (a Telegram message id, a uuid hex): kept as is."""

    pattern: re.Pattern[str]

    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) is str and len(value) <= MAX_ID and self.pattern.fullmatch(value):
            return value
        raise Drop

    def admits(self, stored: str) -> bool:
        return len(stored) <= MAX_ID and bool(self.pattern.fullmatch(stored))


@dataclass(frozen=True)
class Name(Kind):
    """A name chosen by a person or a model: stored as a keyed id, never as itself.

    `known` names are roost's own (the command table) and are kept; `strip`
    is a prefix removed before hashing, so `me.x` and `x` give one id.
    """

    kind: str
    known: frozenset[str] = frozenset()
    strip: str = ""

    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) is not str or not value:
            raise Drop
        if len(value) <= MAX_ID and value in self.known:
            return value
        return namer(self.kind, tenant, value.removeprefix(self.strip))

    def admits(self, stored: str) -> bool:
        return stored in self.known or bool(NAME_ID_RE.fullmatch(stored))


@dataclass(frozen=True)
class ListOf(Kind):
    item: Kind

    def check(self, value: object, tenant: str | None, namer: Namer) -> object:
        if type(value) not in (list, tuple) or len(value) > MAX_ITEMS:  # type: ignore[arg-type]
            raise Drop
        return [self.item.check(v, tenant, namer) for v in value]  # type: ignore[attr-defined]

    def admits(self, stored: str) -> bool:
        return self.item.admits(stored)


def enum(*values: str) -> Enum:
    return Enum(frozenset(values))


# The chat commands roost defines (kept by name); any other `/word` is hashed.
COMMANDS = frozenset(
    [
        "help",
        "start",
        "whoami",
        "reset",
        "new",
        "model",
        "usage",
        "voice",
        "unpair",
        "export",
        "memory",
        "remember",
        "forget",
        "profile",
        "persona",
        "audience",
        "skills",
        "tool",
        "tools",
        "remind",
        "every",
        "jobs",
        "job",
        "pair",
        "skill",
        "status",
        "yes",
        "no",
        "recall",
        "stop",
    ]
)

INT, BOOL = Int(), Bool()
HASH = Ref(re.compile(r"[0-9a-f]{8,64}"))
# The kinds a platform's declaration extends (`schemas_for`): on their own they
# keep only what roost itself makes.
# roost's uuid4 hex | a scheduled run (`job:<job id>:<slot ms>`) (+ the platforms' message ids)
MSG = Ref(re.compile(r"[0-9a-f]{32}|job:[a-km-np-z2-9]{6}:[0-9]{1,16}"))
IDENTITY = Ref(re.compile(r"local"))  # the loopback person (+ the platforms' identities)
CHAT = Name("chat")  # web and terminal chat names are typed by people
CHANNEL = enum()  # the registry's platform names (`schemas_for`)
BY = enum("model", "person", "user", "operator")
MEMORY, TOOL, PERSONA = Name("memory"), Name("tool", strip="me."), Name("persona")
# Two names stay readable: a skill is a file the person authored (the style
# learner reads its name back from the chain) and a vault name is set by the
# operator with `roost vault set`; both are identifiers of a fixed pattern.
SKILL = Ref(re.compile(r"[a-z0-9][a-z0-9_-]{0,63}"))
SECRET = Ref(re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}"))
BULLET = Ref(re.compile(r"b-[0-9]{4,12}"))
LABEL = enum("approval", "rejection", "rephrase", "neutral")
# A job id as bridge/schedule/jobs.py makes it: 6 of its base32 alphabet (no l, o, 0, 1).
JOB = Ref(re.compile(r"[a-km-np-z2-9]{6}"))
_KIND = "(?:audio|document|photo|voice)"  # bridge.types.messages.AttachmentKind
KINDS = Ref(re.compile(f"{_KIND}(?:,{_KIND}){{0,3}}"))  # "document,photo": sorted, joined
JOB_KIND = enum("reminder", "turn", "tool")
# A host name or IP as a tool declared it in NETWORK (the broker fills `host`
# only with declared hosts; others go to `host_id`, a keyed id).
HOSTNAME = Ref(
    re.compile(r"(?:[a-z0-9-]{1,63}\.)+[a-z]{2,24}(?::[0-9]{1,5})?|[0-9.]{7,15}(?::[0-9]{1,5})?")
)

# A model's configured name ([llm] name, [models.X]): the operator's, kept readable.
MODEL = Ref(re.compile(r"[a-z0-9][a-z0-9_-]{0,31}"))
PERIOD = Ref(re.compile(r"[0-9]{4}-[0-9]{2}(-[0-9]{2})?"))  # a UTC day or month

# a pending offer's id (bridge/corrections/offers.py) and the closed subject keys of subjects.py
OFFER = Ref(re.compile(r"[a-hj-km-np-z][2-9][a-hj-km-np-z][2-9]"))
SUBJECT = enum(
    "none",
    "name",
    "formality",
    "language",
    "units",
    "time",
    "emoji",
    "apology",
    "disclaimer",
    "closer",
    "preamble",
    "echo",
    "sources",
    "spelling",
    "punctuation",
    "indent",
    "code",
    "format",
    "length",
)

SCHEMAS: dict[str, dict[str, Kind]] = {
    "message.received": {
        "channel": CHANNEL,
        "chat": CHAT,
        "msg_id": MSG,
        "chars": INT,
        "quoted_chars": INT,
        # core/perceive.attachment_meta: how many, which kinds, bytes, audio length
        "attachments": INT,
        "attachment_kinds": KINDS,
        "attachment_bytes": INT,
        "attachment_ms": INT,
    },
    "message.answered": {
        "channel": CHANNEL,
        "chat": CHAT,
        "msg_id": MSG,
        "chars": INT,
        "ms": INT,
        "steps": INT,
        "tool_calls": INT,
    },
    "message.failed": {
        "channel": CHANNEL,
        "kind": enum(
            "auth",
            "not_found",
            "rate_limited",
            "unavailable",
            "timeout",
            "bad_response",
            "config",
            "cancelled",
            "stopped",
        ),
    },
    "command.run": {
        "name": Name("command", known=COMMANDS),
        "outcome": enum("ok", "usage", "unknown", "refused"),
        "channel": CHANNEL,
    },
    "access.refused": {"channel": CHANNEL, "identity": IDENTITY, "suppressed": INT},
    "access.flood": {
        "event": enum("access.refused", "pairing.failed"),
        "count": INT,
        "identities": INT,
        "window_s": INT,
    },
    "memory.saved": {
        "name": MEMORY,
        "type": enum("user", "feedback", "project", "reference"),
        "chars": INT,
        "created": BOOL,
        "by": BY,
        "channel": CHANNEL,
        "chat": CHAT,
        "msg_id": MSG,
        "index_chars": INT,
    },
    "memory.refused": {"by": BY, "reasons": INT, "chars": INT},
    "memory.deleted": {
        "name": MEMORY,
        "type": enum("user", "feedback", "project", "reference"),
        "chars": INT,
        "by": BY,
    },
    "memory.undone": {
        "name": MEMORY,
        "op": enum("save", "delete", "remember", "consolidate"),
        "files": INT,
    },
    "profile.changed": {
        "field": Name("profile"),
        "op": enum("set", "rm"),
        "chars": INT,
        "profile_chars": INT,
    },
    "persona.changed": {"persona": PERSONA, "previous": PERSONA, "channel": CHANNEL, "chat": CHAT},
    "audience.changed": {
        "op": enum("set", "clear"),
        "chars": INT,
        "channel": CHANNEL,
        "chat": CHAT,
    },
    "voice.transcribed": {
        "kind": enum("voice", "audio"),
        "bytes": INT,
        "duration_s": INT,
        "outcome": enum("ok", "too_large", "not_configured", "unsupported", "failed", "empty"),
    },
    "voice.spoken": {
        "chars": INT,
        "bytes": INT,
        "outcome": enum("ok", "failed"),
        "channel": CHANNEL,
    },
    "voice.changed": {"on": BOOL, "channel": CHANNEL, "chat": CHAT},
    "tool.created": {
        "name": TOOL,
        "hash": HASH,
        "outcome": enum("ok", "rejected"),
        "findings": INT,
        "version": INT,
    },
    "tool.offered": {"name": TOOL, "hash": HASH, "changed": BOOL},
    "tool.saved": {"name": TOOL, "hash": HASH, "replace": BOOL},
    "tool.removed": {"name": TOOL, "hash": HASH},
    "tool.called": {
        "name": TOOL,
        "hash": HASH,
        "ms": INT,
        "outcome": enum("ok", "error"),
        "error_kind": enum(
            "lint", "compile", "runtime", "denied", "timeout", "memory", "output", "quota"
        ),
        "channel": CHANNEL,
    },
    "tool.http": {
        "tool": TOOL,
        "host": HOSTNAME,  # only a host the tool declared in NETWORK (consented at save)
        "host_id": Name("host"),  # any other host: a keyed id
        "method": enum("GET", "POST"),
        "status": INT,
        "bytes": INT,
        "ms": INT,
        "outcome": enum("ok", "refused", "error"),
        "rule": enum(
            "undeclared",
            "scheme",
            "dns",
            "address",
            "redirects",
            "size",
            "count",
            "rate",
            "timeout",
            "error",
            "header",
            "secret",
        ),
    },
    "mcp.called": {  # a tool of an operator-attached MCP server (bridge/mcp/source.py)
        "server": Name("mcp_server"),  # the config key: a keyed id like every chosen name
        "tool": Name("mcp_tool"),  # the server's own tool name: a keyed id
        "ms": INT,
        "ok": BOOL,
        "error_kind": enum("start", "timeout", "tool", "protocol"),
    },
    "secret.used": {"name": SECRET, "purpose": TOOL},
    "secret.stored": {"name": SECRET, "by": enum("operator")},
    "secret.removed": {"name": SECRET, "by": enum("operator")},
    "pairing.issued": {"ttl_s": INT},
    "pairing.used": {"channel": CHANNEL, "identity": IDENTITY},
    "pairing.revoked": {
        "channel": CHANNEL,
        "identity": IDENTITY,
        "by": enum("user", "operator", "config"),
    },
    "chat.model_set": {"model": MODEL, "previous": MODEL, "channel": CHANNEL, "chat": CHAT},
    "budget.reached": {
        "budget": enum("daily", "monthly"),
        "used": INT,
        "limit": INT,
        "period": PERIOD,
    },
    "pairing.failed": {"channel": CHANNEL, "identity": IDENTITY, "locked": BOOL, "suppressed": INT},
    "skill.graded": {
        "name": SKILL,
        "signal": enum("auto"),
        "step_milli": INT,
        "grade_milli": INT,
    },
    "skill.outcome_graded": {
        "signal": LABEL,
        "skills": ListOf(SKILL),
        "prev_run_id": MSG,
        "relevant": ListOf(SKILL),  # asked about, not used (bridge/skills/observer.py)
    },
    # skill-forge (bridge/skills/forge.py): a proposal's name is the model's, not yet
    # consented to, so it is a keyed id; a saved skill's name is readable like skill.graded
    "skill.proposed": {
        "name": Name("skill"),
        "hash": HASH,
        "created": BOOL,
        "chars": INT,
        "similarity_pct": INT,
    },
    "skill.saved": {
        "name": SKILL,
        "hash": HASH,
        "created": BOOL,
        "grade_kept": BOOL,
        "similarity_pct": INT,
    },
    "skill.removed": {"name": SKILL, "hash": HASH},
    "skill.restored": {"name": SKILL, "hash": HASH, "undid": enum("save", "rm")},
    "outcome.graded": {
        "label": LABEL,
        "confidence_pct": INT,
        "prev_run_id": MSG,
        "msg_id": MSG,
        "channel": CHANNEL,
    },
    # the outcome judge's late label for a follow-up the lexical stage left neutral
    "outcome.judged": {
        "label": LABEL,
        "prev_run_id": MSG,
        "msg_id": MSG,
        "channel": CHANNEL,
        "cached": BOOL,
    },
    "style.candidate": {
        "bullet_id": BULLET,
        "skill": SKILL,
        "signal_count": INT,
        "negative_pct": INT,
    },
    "style.judged": {
        "bullet_id": BULLET,
        "verdict": enum("faithful", "overfit", "error"),
        "judge_ms": INT,
    },
    "style.promoted": {
        "bullet_id": BULLET,
        "skill": SKILL,
        "with_negative_pct": INT,
        "without_negative_pct": INT,
        "turn_count": INT,
    },
    "style.rolled_back": {
        "bullet_id": BULLET,
        "skill": SKILL,
        "negative_pct": INT,
        "cooldown_days": INT,
    },
    "job.created": {
        "id": JOB,
        "kind": JOB_KIND,
        "recurring": BOOL,
        "channel": CHANNEL,
        "by": enum("user", "model"),
    },
    "job.changed": {
        "id": JOB,
        "action": enum("removed", "paused", "resumed"),
        "by": enum("user", "operator"),
    },
    "job.ran": {
        "id": JOB,
        "kind": JOB_KIND,
        "outcome": enum("ok", "failed", "skipped"),
        "ms": INT,
        "late_ms": INT,
    },
    "outbox.delivered": {"entry": INT, "channel": CHANNEL, "attempts": INT, "late_ms": INT},
    "outbox.failed": {
        "entry": INT,
        "channel": CHANNEL,
        "attempts": INT,
        "error": enum(
            "network",
            "rate_limited",
            "rejected",
            "forbidden",
            "not_found",
            "timeout",
            "window",  # the platform takes no message now (WhatsApp's 24 hours): it waits
            "unknown",
        ),
        "dead": BOOL,
    },
    "session.summarised": {
        "channel": CHANNEL,
        "chat": CHAT,
        "how": enum("summary", "dropped"),
        "turns": INT,
        "chars_before": INT,
        "chars_after": INT,
    },
    "audit.repaired": {"bytes_cut": INT},
    # a person's data handed over (`roost export`, /export) or erased (`roost forget`)
    "data.exported": {
        "files": INT,
        "rows": INT,
        "audit_records": INT,
        "bytes": INT,
        "by": enum("operator", "user"),
        "channel": CHANNEL,
    },
    "data.forgotten": {"files": INT, "rows": INT, "bytes": INT, "by": enum("operator")},
    # corrections that stick (bridge/corrections) and memory consolidation (bridge/memory/tidy.py)
    "correction.offered": {
        "id": OFFER,
        "subject": SUBJECT,
        "polarity": INT,
        "lang": enum("en", "de"),
        "hash": HASH,
        "channel": CHANNEL,
    },
    "correction.kept": {
        "kind": enum("memory", "steering"),
        "hash": HASH,
        "subject": SUBJECT,
        "replaced": BOOL,
    },
    "correction.replaced": {
        "kind": enum("memory", "steering"),
        "old_hash": HASH,
        "hash": HASH,
        "subject": SUBJECT,
    },
    "memory.consolidated": {
        "merged": INT,
        "into": INT,
        "dropped": INT,
        "index_before": INT,
        "index_after": INT,
    },
    # recall (bridge/recall): searches and imports, counts only
    "recall.searched": {
        "by": BY,
        "k": INT,
        "hits": INT,
        "query_chars": INT,
        "ms": INT,
    },
    "history.imported": {
        "format": enum("jsonl", "chatgpt", "claude"),
        "conversations": INT,
        "read": INT,
        "added": INT,
        "known": INT,
        "refused": INT,
        "skipped": INT,
    },
    "memory.superseded": {"name": MEMORY, "old_hash": HASH, "hash": HASH, "by": BY},
}


Schemas = Mapping[str, Mapping[str, Kind]]


def schemas_for(platforms: Iterable[Platform]) -> dict[str, dict[str, Kind]]:
    """`SCHEMAS` with the platforms' names as the channel enum and their identity and
    message-id patterns kept (each field that holds a channel, identity or message id)."""
    known = list(platforms)
    channel = Enum(frozenset(p.name for p in known))
    identity = _union(IDENTITY, [p.identity for p in known])
    msg = _union(MSG, [p.msg_id for p in known if p.msg_id is not None])
    swap: dict[int, Kind] = {id(CHANNEL): channel, id(IDENTITY): identity, id(MSG): msg}
    return {
        event: {key: swap.get(id(kind), kind) for key, kind in fields.items()}
        for event, fields in SCHEMAS.items()
    }


def _union(base: Ref, extra: Iterable[re.Pattern[str]]) -> Ref:
    patterns = [base.pattern.pattern, *(p.pattern for p in extra)]
    return Ref(re.compile("|".join(f"(?:{p})" for p in dict.fromkeys(patterns))))


def sanitize(
    event: str,
    tenant: str | None,
    details: Mapping[str, object] | Mapping[object, object],
    namer: Namer,
    schemas: Schemas | None = None,
) -> dict[str, object]:
    """The details as they may be written: fitting fields, `_dropped`, `_unknown`.
    `schemas`: `schemas_for(the roost's platforms)`; without it, no channel is kept."""
    schema = (schemas if schemas is not None else SCHEMAS).get(event, {})
    out: dict[str, object] = {}
    dropped: list[str] = []
    unknown = 0
    for key, value in details.items():
        kind = schema.get(key) if type(key) is str else None
        if kind is None:
            unknown += 1
            continue
        try:
            out[key] = kind.check(value, tenant, namer)  # type: ignore[index]
        except Drop:
            dropped.append(key)  # type: ignore[arg-type]
    if dropped:
        out["_dropped"] = sorted(dropped)
    if unknown:
        out["_unknown"] = unknown
    return out

"""The event catalogue: every event roost records, with an example of its details.

Documentation as data: docs/audit.md shows the same table; the kinds of the
fields are in `schema.py`. Tests check that every example fits the schema,
that every event is documented, and that the events a real run emits are
catalogued with keys listed here.
"""

from __future__ import annotations

H = "3f2a9c1e0b7d"  # a sha256 prefix (hex)

EVENTS: dict[str, dict[str, object]] = {
    "message.received": {
        "channel": "telegram",
        "chat": "111",
        "msg_id": "42",
        "chars": 58,
        "quoted_chars": 0,
    },
    "message.answered": {
        "channel": "telegram",
        "chat": "111",
        "msg_id": "42",
        "chars": 640,
        "ms": 2310,
        "steps": 2,
        "tool_calls": 1,
    },
    "message.failed": {"channel": "web", "kind": "rate_limited"},
    "command.run": {"name": "memory", "outcome": "ok", "channel": "web"},
    "access.refused": {"channel": "telegram", "identity": "999", "suppressed": 0},
    "access.flood": {
        "event": "access.refused",
        "count": 9950,
        "identities": 9950,
        "window_s": 3600,
    },
    "memory.saved": {
        "name": "tabs",
        "type": "feedback",
        "chars": 212,
        "created": True,
        "by": "model",
        "channel": "web",
        "chat": "default",
        "msg_id": "5f1c0e9a2b7d4c3e8f6a1b2c3d4e5f60",
        "index_chars": 1474,
    },
    "memory.refused": {"by": "model", "reasons": 1, "chars": 80},
    "memory.deleted": {"name": "tabs", "type": "feedback", "chars": 212, "by": "user"},
    "memory.undone": {"name": "tabs", "op": "delete", "files": 1},
    "profile.changed": {"field": "name", "op": "set", "chars": 3, "profile_chars": 120},
    "persona.changed": {
        "persona": "forge",
        "previous": "default",
        "channel": "web",
        "chat": "default",
    },
    "audience.changed": {"op": "set", "chars": 24, "channel": "telegram", "chat": "111"},
    "tool.created": {"name": "csv_sum", "hash": H, "outcome": "ok", "findings": 0},
    "tool.saved": {"name": "me.csv_sum", "hash": H, "replace": False},
    "tool.removed": {"name": "me.csv_sum", "hash": H},
    "tool.called": {
        "name": "me.csv_sum",
        "hash": H,
        "ms": 41,
        "outcome": "error",
        "error_kind": "timeout",
        "channel": "mcp",
    },
    "mcp.called": {
        "server": "github",
        "tool": "list_issues",
        "ms": 230,
        "ok": False,
        "error_kind": "timeout",
    },
    "tool.http": {
        "tool": "me.weather",
        "host": "api.open-meteo.com",
        "host_id": "n-5d41402abc4b2a76",
        "method": "GET",
        "status": 200,
        "bytes": 5123,
        "ms": 180,
        "outcome": "refused",
        "rule": "undeclared",
    },
    "secret.used": {"name": "github", "purpose": "me.open_prs"},
    "secret.stored": {"name": "github", "by": "operator"},
    "secret.removed": {"name": "github", "by": "operator"},
    "pairing.issued": {"ttl_s": 3600},
    "pairing.used": {"channel": "telegram", "identity": "111111"},
    "pairing.revoked": {"channel": "telegram", "identity": "111111", "by": "operator"},
    "chat.model_set": {"model": "smart", "previous": "default", "channel": "web", "chat": "c"},
    "budget.reached": {"budget": "daily", "used": 50210, "limit": 50000, "period": "2027-01-15"},
    "pairing.failed": {
        "channel": "telegram",
        "identity": "222222",
        "locked": False,
        "suppressed": 3,
    },
    "skill.graded": {"name": "deploy", "signal": "auto", "step_milli": 300, "grade_milli": 1300},
    "skill.outcome_graded": {
        "signal": "rejection",
        "skills": ["deploy", "review"],
        "prev_run_id": "41",
    },
    "outcome.graded": {
        "label": "rephrase",
        "confidence_pct": 80,
        "prev_run_id": "41",
        "msg_id": "42",
        "channel": "telegram",
    },
    "outcome.judged": {
        "label": "rephrase",
        "prev_run_id": "41",
        "msg_id": "42",
        "channel": "telegram",
        "cached": False,
    },
    "style.candidate": {
        "bullet_id": "b-0007",
        "skill": "deploy",
        "signal_count": 8,
        "negative_pct": 80,
    },
    "style.judged": {"bullet_id": "b-0007", "verdict": "faithful", "judge_ms": 5400},
    "style.promoted": {
        "bullet_id": "b-0007",
        "skill": "deploy",
        "with_negative_pct": 31,
        "without_negative_pct": 52,
        "turn_count": 64,
    },
    "style.rolled_back": {
        "bullet_id": "b-0007",
        "skill": "deploy",
        "negative_pct": 58,
        "cooldown_days": 30,
    },
    "job.created": {
        "id": "k7m2pq",
        "kind": "reminder",
        "recurring": False,
        "channel": "telegram",
        "by": "user",
    },
    "job.changed": {"id": "k7m2pq", "action": "paused", "by": "user"},
    "job.ran": {"id": "k7m2pq", "kind": "turn", "outcome": "ok", "ms": 2310, "late_ms": 140},
    "outbox.delivered": {"entry": 17, "channel": "telegram", "attempts": 2, "late_ms": 5200},
    "outbox.failed": {
        "entry": 17,
        "channel": "telegram",
        "attempts": 3,
        "error": "network",
        "dead": False,
    },
    "session.summarised": {
        "channel": "telegram",
        "chat": "111",
        "how": "summary",
        "turns": 9,
        "chars_before": 33120,
        "chars_after": 17480,
    },
    "audit.repaired": {"bytes_cut": 37},
    "data.exported": {
        "files": 12,
        "rows": 240,
        "audit_records": 310,
        "bytes": 48213,
        "by": "user",
        "channel": "telegram",
    },
    "data.forgotten": {"files": 14, "rows": 251, "bytes": 91022, "by": "operator"},
}

# Emitted by the user-style sweep (`roost style sweep`), not by turns.
SWEEP_EVENTS = frozenset({"style.candidate", "style.judged", "style.promoted", "style.rolled_back"})

# Emitted by the scheduler and the outbox when jobs run and messages go out, not by turns.
SCHEDULER_EVENTS = frozenset({"job.ran", "outbox.delivered", "outbox.failed"})

"""The event catalogue: every event roost records, with an example of its details.

Documentation as data (docs/audit.md shows the same table); a test checks that
every example passes the redactor unchanged, so the documented keys are keys
the writer keeps. Events outside the catalogue are allowed (same redaction).
"""

from __future__ import annotations

H = "3f2a9c1e"  # a hash prefix (hex)

EVENTS: dict[str, dict[str, object]] = {
    "message.received": {"message_id": "tg:111:42", "channel": "telegram", "chars": 58},
    "message.answered": {
        "message_id": "tg:111:42",
        "channel": "telegram",
        "reply_chars": 640,
        "duration_ms": 2310,
        "first_token_ms": 410,
        "steps": 2,
        "tool_call_count": 1,
        "model": "qwen2.5:7b",
        "input_token_count": 1830,
        "output_token_count": 212,
    },
    "command.run": {"command": "memory", "action": "rm", "outcome": "ok", "duration_ms": 3},
    "access.refused": {"channel": "telegram", "identity_hash": H, "reason_kind": "not_allowed"},
    "memory.saved": {"name": "tabs", "type": "feedback", "size_bytes": 212, "content_hash": H},
    "memory.deleted": {"name": "tabs", "type": "feedback", "by": "user"},
    "memory.undone": {"name": "tabs", "undid": "memory.deleted", "undid_seq": 118},
    "profile.changed": {"field_count": 4, "profile_hash": H, "by": "model"},
    "tool.created": {"name": "csv_sum", "scope": "session", "source_hash": H, "line_count": 14},
    "tool.saved": {"name": "me.csv_sum", "source_hash": H},
    "tool.removed": {"name": "me.csv_sum"},
    "tool.called": {
        "name": "me.csv_sum",
        "source_hash": H,
        "duration_ms": 41,
        "outcome": "error",
        "error_kind": "timeout",
    },
    "secret.used": {"name": "github", "tool": "me.open_prs"},
    "pairing.issued": {"code_hash": H, "ttl_ms": 600000},
    "pairing.used": {"channel": "telegram", "identity_hash": H, "code_hash": H},
    "pairing.failed": {"channel": "telegram", "identity_hash": H, "reason_kind": "expired"},
    "skill.graded": {"skill": "deploy", "delta_milli": 300, "grade_milli": 900},
    "skill.outcome_graded": {
        "signal": "rejection",
        "skills": ["deploy", "review"],
        "prev_run_id": "tg:111:41",
        "confidence_pct": 95,
    },
    "outcome.graded": {
        "signal": "rephrase",
        "prev_run_id": "tg:111:41",
        "message_id": "tg:111:42",
        "confidence_pct": 80,
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
    "audit.repaired": {"bytes_cut": 37},
}

"""What a person consents to when they keep a tool, and what changed: pure text.

Saving a tool is consent to exactly one version of it: the vault secrets it
may read and the hosts it may call (`capabilities`), identified by its
sha256. `/tool save NAME` shows that (`prompt`), with what changed since the
version the person was last shown (or since the saved tool it would
replace): capabilities gained or lost, and a short line diff (`short_diff`);
`confirm_command` is the one-tap button's command, bound to the hash. Every
rewrite of a draft is told in the chat as it happens (`rewrite_notice`).
"""

from __future__ import annotations

import difflib
from typing import Any

from forge.library import ToolSpec

DIFF_LINES = 12  # changed lines shown in a notice or a prompt
LINE_CHARS = 100
HASH_SHOWN = 12  # hex digits of the sha256 a person sees and a button carries
MIN_HASH = 8  # the shortest prefix `/tool save NAME yes HASH` accepts
MAX_COMMAND_BYTES = 64  # a button's command (Telegram's callback data)


def params(schema: dict[str, Any]) -> str:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = []
    for name, spec in props.items():
        kind = spec.get("type", "any")
        kind = "|".join(kind) if isinstance(kind, list) else kind
        parts.append(f"{name}: {kind}" + ("" if name in required else "?"))
    return ", ".join(parts)


def capabilities(spec: ToolSpec) -> list[str]:
    """What keeping `spec` allows: parameters, vault secrets, network hosts, its hash."""
    return [
        f"Parameters: {params(spec.schema) or 'none'}",
        f"It may read these vault secrets: {', '.join(spec.secrets) or 'none'}",
        f"It may call these network hosts: {', '.join(spec.network) or 'none'}",
        f"sha256 {spec.sha256[:HASH_SHOWN]}…",
    ]


def _delta(kind: str, old: tuple[str, ...], new: tuple[str, ...]) -> list[str]:
    added = [x for x in new if x not in old]
    gone = [x for x in old if x not in new]
    out = []
    if added:
        out.append(f"now may use {kind}: {', '.join(added)}")
    if gone:
        out.append(f"no longer uses {kind}: {', '.join(gone)}")
    return out


def capability_changes(old: ToolSpec, new: ToolSpec) -> list[str]:
    """Secrets and hosts gained or lost between two versions ('' parts left out)."""
    return _delta("vault secrets", old.secrets, new.secrets) + _delta(
        "network hosts", old.network, new.network
    )


def short_diff(old: str, new: str, limit: int = DIFF_LINES) -> str:
    """The changed lines (`-` old, `+` new, no context), at most `limit`, each cut."""
    lines = [
        line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm="")
        if not line.startswith(("---", "+++", "@@"))
    ]
    if not lines:
        return "(no line changed)"
    more = len(lines) - limit
    shown = lines[:limit] + (
        [f"… {more} more changed lines (/tool show after saving)"] if more > 0 else []
    )
    return "```diff\n" + "\n".join(shown) + "\n```"


def _caps_line(spec: ToolSpec) -> str:
    secrets = ", ".join(spec.secrets) or "none"
    hosts = ", ".join(spec.network) or "none"
    return f"vault secrets: {secrets}; network hosts: {hosts}"


def rewrite_notice(
    name: str, version: int, new: ToolSpec, old: ToolSpec | None, saved: ToolSpec | None
) -> str:
    """The person's notice for a draft written or rewritten by the model."""
    if old is not None:
        head = f"🔧 Draft {name} rewritten (v{version - 1} → v{version}): {_caps_line(new)}."
        changes, base = capability_changes(old, new), old
    elif saved is not None and saved.sha256 != new.sha256:
        head = f"🔧 Draft {name} (v{version}) differs from your saved me.{name}: {_caps_line(new)}."
        changes, base = capability_changes(saved, new), saved
    else:
        return (
            f"🔧 Draft {name} written (v{version}): {_caps_line(new)}. Keep it: /tool save {name}"
        )
    lines = [head, *(f"⚠️ It {c}." for c in changes), short_diff(base.source, new.source)]
    return "\n".join(lines)


def confirm_command(name: str, alias: str | None, sha256: str) -> str | None:
    """The button's command that saves exactly `sha256`; None when it cannot fit."""
    head = f"/tool save {name}" + (f" as {alias}" if alias else "") + " yes"
    for command in (f"{head} {sha256[:HASH_SHOWN]}", f"{head} {sha256[:MIN_HASH]}", head):
        if len(command.encode()) <= MAX_COMMAND_BYTES:
            return command
    return None


def prompt(
    spec: ToolSpec,
    version: int,
    target: str,
    baseline: tuple[str, ToolSpec] | None,
    replaces: bool,
) -> str:
    """The consent prompt: what saving this exact version allows, and what changed."""
    lines = [
        f"Keep draft {spec.name} v{version} as me.{target}? You consent to exactly this version:",
        f"me.{target}({params(spec.schema)}) — {spec.description}",
        *capabilities(spec)[1:],
    ]
    if replaces:
        lines.append(f"⚠️ It replaces your saved me.{target}.")
    if baseline is not None and baseline[1].sha256 != spec.sha256:
        label, base = baseline
        lines.append(f"⚠️ Changed since {label}:")
        lines += [f"- It {c}." for c in capability_changes(base, spec)]
        lines.append(short_diff(base.source, spec.source))
    command = f"/tool save {spec.name}" + ("" if target == spec.name else f" as {target}")
    lines.append(f"To keep it, send: {command} yes {spec.sha256[:HASH_SHOWN]}")
    return "\n".join(lines)

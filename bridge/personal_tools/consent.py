"""What a person consents to when they keep a tool, and what changed: pure text.

Saving a tool is consent to exactly one version of it: the vault secrets it
may read and the hosts it may call (`capabilities`), identified by its
sha256. `/tool save NAME` shows that (`prompt`), with what changed since the
version the person was last shown (or since the saved tool it would
replace): capabilities gained or lost, and a short line diff (`short_diff`);
`confirm_command` is the one-tap button's command, always bound to the hash
of the version shown (`/tool save NAME [as ALIAS] yes HASH`, or the short
`/tool yes HASH [as ALIAS]` when that does not fit Telegram's 64 bytes of
callback data). A version that declares vault secrets or network hosts is
shown with how to read its code first (`/tool show NAME`) and the `net`
calls found in it (`net_calls`: method and URL, parts computed at run time
as "…"; a hint read from the code, not a limit). Every rewrite of a draft is
told in the chat as it happens (`rewrite_notice`). The tool's own words (its
source, its description, those URLs) are shown as code that nothing in them
can close (`fenced`, `code`, `said`), so none of it formats as roost's text.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import re
from typing import TYPE_CHECKING, Any

from forge.lint_net import undeclared_calls

if TYPE_CHECKING:
    from forge.library import ToolSpec

DIFF_LINES = 12  # changed lines shown in a notice or a prompt
LINE_CHARS = 100
HASH_SHOWN = 12  # hex digits of the sha256 a person sees and a button carries
MIN_HASH = 8  # the shortest prefix `/tool save NAME yes HASH` accepts
MAX_COMMAND_BYTES = 64  # a button's command (Telegram's callback data)
NET_CALLS = 8  # `net` calls listed in a prompt
NET_METHODS = {"get": "GET", "post": "POST"}


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


def fenced(text: str, info: str) -> str:
    """`text` as a Markdown code block whose fence no line of it can close: one
    backtick more than its longest run (CommonMark 4.5), as skills' diffs. A
    source line of three backticks (in a docstring) closed a plain fence, and what
    followed it showed as roost's own text, bold and all (session 47's attacker pass)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def code(text: str) -> str:
    """`text` as a Markdown code span it cannot close or format: a fence one backtick
    longer than its longest run, padded with a space when it starts or ends with a
    backtick or a space (CommonMark 6.1 strips one from each side). A URL or a
    description from a tool is shown so (`**bold**`, `[text](url)` stay as written);
    each channel shows a code span's text as it is (WhatsApp: `whatsapp.render`)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def said(description: str) -> str:
    """A tool's description as the person reads it: its own words, in a code span
    (on one line, nothing hidden), so it cannot pass for roost's text."""
    return code(_shown(description))


def short_diff(old: str, new: str, name: str, limit: int = DIFF_LINES) -> str:
    """The changed lines (`-` old, `+` new, no context), at most `limit`, each cut;
    the rest is read with `/tool show NAME`."""
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), n=0, lineterm="")
    lines = [  # the two header lines dropped by place: a code line may start with ++ or --
        line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
        for line in itertools.islice(diff, 2, None)
        if not line.startswith("@@")  # a hunk's range; a code line starts with - or +
    ]
    if not lines:
        return "(no line changed)"
    more = len(lines) - limit
    shown = lines[:limit] + (
        [f"… {more} more changed lines (the whole code: /tool show {name})"] if more > 0 else []
    )
    return "```diff\n" + "\n".join(shown) + "\n```"  # each line starts with - or +


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
        read = f" Read it first: /tool show {name}." if new.secrets or new.network else ""
        return (
            f"🔧 Draft {name} written (v{version}): {_caps_line(new)}.{read} "
            f"Keep it: /tool save {name}"
        )
    lines = [head, *(f"⚠️ It {c}." for c in changes), short_diff(base.source, new.source, name)]
    return "\n".join(lines)


def confirm_command(name: str, alias: str | None, sha256: str) -> str:
    """The button's command that saves exactly `sha256`, within `MAX_COMMAND_BYTES`:
    the typed form when it fits, else `/tool yes HASH [as ALIAS]` (at most 63 bytes
    for a valid alias). Never without the hash."""
    as_alias = f" as {alias}" if alias else ""
    head = f"/tool save {name}{as_alias} yes"
    candidates = [f"{head} {sha256[:n]}" for n in (HASH_SHOWN, MIN_HASH)]
    candidates += [f"/tool yes {sha256[:n]}{as_alias}" for n in (HASH_SHOWN, MIN_HASH)]
    for command in candidates:
        if len(command.encode()) <= MAX_COMMAND_BYTES:
            return command
    return candidates[-1]


def _url(node: ast.expr) -> str:
    """A URL argument as written: constant parts kept, computed parts as "…"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_url(v) if isinstance(v, ast.Constant) else "…" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _url(node.left) + _url(node.right)
    return "…"


def _shown(text: str) -> str:
    """`text` on one line with nothing hidden: each unprintable character (line
    breaks, bidi controls) as its escape, so a URL cannot fake a prompt line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def net_calls(source: str) -> tuple[list[str], bool]:
    """The `net.get` / `net.post` calls in `source` ("POST https://host/path/…"), in
    order, and whether `net` is also used in another way (so the list may be short)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], True
    calls: list[tuple[int, int, str]] = []
    direct: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner, attr = node.func.value, node.func.attr
        if isinstance(owner, ast.Name) and owner.id == "net" and attr in NET_METHODS:
            direct.add(id(owner))
            url = node.args[0] if node.args else None
            url = url or next((k.value for k in node.keywords if k.arg == "url"), None)
            try:
                where = _shown(_url(url)) if url is not None else "…"
            except RecursionError:  # `"a" + "b" + ...` thousands deep: not listed
                where = "…"
            calls.append((node.lineno, node.col_offset, f"{NET_METHODS[attr]} {where}"))
    other = any(
        (isinstance(n, ast.Name) and n.id == "net" and id(n) not in direct)
        or (isinstance(n, ast.ImportFrom) and n.module == "net")
        or (isinstance(n, ast.Import) and any(a.asname not in (None, "net") for a in n.names))
        for n in ast.walk(tree)
    )
    return [call for _, _, call in sorted(calls)], other


def undeclared_lines(spec: ToolSpec) -> list[str]:
    """A warning for each host written in the code that NETWORK does not declare:
    such a call is refused every time, so it is not something the person allows."""
    try:
        tree = ast.parse(spec.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    hosts = list(dict.fromkeys(u.host for u in undeclared_calls(tree, spec.network)))
    return [
        f"⚠️ Its code calls {code(_shown(host))}, which it does not declare: those calls "
        "will be refused, saving does not allow them."
        for host in hosts
    ]


def code_lines(spec: ToolSpec, show: str) -> list[str]:
    """For a version that may read secrets or call hosts: how to read its code
    first, the `net` calls found in it, and a warning for each host it calls but
    does not declare ([] for one that may do none of this)."""
    warnings = undeclared_lines(spec)
    if not spec.secrets and not spec.network and not warnings:
        return []
    lines = [f"📖 Read its code before you say yes: {show}"]
    found, other = net_calls(spec.source)
    if found:
        lines.append("Network calls in its code:")
        for call in found[:NET_CALLS]:
            method, _, url = call.partition(" ")
            cut = url if len(url) <= LINE_CHARS else url[: LINE_CHARS - 1] + "…"
            lines.append(f"- {method} {code(cut)}")
        if len(found) > NET_CALLS:
            lines.append(f"- … {len(found) - NET_CALLS} more")
    if other:
        lines.append("(It also uses net in ways not listed here: read the code.)")
    return lines + warnings


def describe(
    spec: ToolSpec,
    version: int,
    target: str,
    baseline: tuple[str, ToolSpec] | None,
    replaces: bool,
) -> list[str]:
    """What keeping this exact version allows, how to read it, and what changed."""
    lines = [
        f"me.{target}({params(spec.schema)}) — {said(spec.description)}",
        *capabilities(spec)[1:],
        *code_lines(spec, f"/tool show {spec.name}"),
    ]
    if replaces:
        lines.append(f"⚠️ It replaces your saved me.{target}.")
    if baseline is not None and baseline[1].sha256 != spec.sha256:
        label, base = baseline
        lines.append(f"⚠️ Changed since {label}:")
        lines += [f"- It {c}." for c in capability_changes(base, spec)]
        lines.append(short_diff(base.source, spec.source, spec.name))
    return lines


def save_command(name: str, target: str) -> str:
    """`/tool save NAME [as ALIAS]`: the plain command that shows a consent prompt."""
    return f"/tool save {name}" + ("" if target == name else f" as {target}")


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
        *describe(spec, version, target, baseline, replaces),
        f"To keep it, send: {save_command(spec.name, target)} yes {spec.sha256[:HASH_SHOWN]}",
    ]
    return "\n".join(lines)


def refusal(
    spec: ToolSpec,
    version: int,
    target: str,
    baseline: tuple[str, ToolSpec] | None,
    replaces: bool,
) -> str:
    """A confirmation that does not name the version last shown: nothing saved, what
    the draft is now, and that only a new `/tool save NAME` can show it for consent."""
    lines = [
        "Not saved: that confirmation is not for the version this chat holds now "
        "(the draft changed, or you were not shown it yet).",
        f"This chat holds draft {spec.name} v{version}:",
        *describe(spec, version, target, baseline, replaces),
        f"To be asked about this version, send: {save_command(spec.name, target)}",
    ]
    return "\n".join(lines)

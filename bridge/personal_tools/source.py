"""The tools a turn offers for the forge: `forge_create` and the `me.*` tools.

`forge_create(name, description, source)` lints and compiles a tool and
keeps it for this chat (findings go back to the model so it can fix the
code). Each saved tool is offered under its wire name `me__<name>` (the
reversible mapping of `forge.names`) and runs in the sandbox through
`forge.calls.call_saved`: metadata and source read once, hash checked, the
vault asked for the declared secrets only, usage counted; then one
`tool.called` event with name, hash prefix, duration and outcome — never
arguments or source. The result goes back whole: the agent loop masks vault
values and then cuts every tool's output at its one limit.

Drafts run before they are saved: each tool written in this chat and not
saved as it is (kept in the database per chat, `bridge.personal_tools.drafts`,
every version; its source masked by the tenant's masker like any stored
text) is offered as `draft__<name>` (the agent loop asks again after
every step, so the model can test a tool in the turn that wrote it): at most
`OFFERED_DRAFTS`, the chat's most recently written. They are read once before
the turn's first step (`prepare`, a `PreparedSource`), and each
`forge_create` puts the draft it wrote among them (no read again); `tools_for`
offers what was read last for that chat (at most `_CHATS` chats remembered).
A chat holds at most `MAX_DRAFTS` drafts: a `forge_create` of another name
is a tool error saying to rewrite one, or to keep or drop one (`/tool save`,
`/tool drop`), and the person is told once per turn. A draft
runs in the same sandbox with the same lint and argument check, but with no
vault secrets (the person has not consented yet) and no usage counted. A
rejected `forge_create` gives the model the findings and the person a notice;
an accepted one that writes or rewrites a draft tells the person too: the
draft, its version, the secrets and hosts it declares, and a short diff
against the version before it or the saved tool of that name
(`consent.rewrite_notice`), so no rewrite happens out of sight.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bridge.core.identity_memo import ByIdentity
from bridge.core.sessions import SessionKey
from bridge.personal_tools.catalog import ToolCatalog
from bridge.personal_tools.consent import rewrite_notice
from bridge.personal_tools.drafts import MAX_DRAFTS, Draft, DraftLimit, DraftStore
from bridge.personal_tools.vault_names import runtime_message
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import ToolSchema
from bridge.types.masked import TextMask
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext
from forge.findings import Finding
from forge.names import check_name, to_wire
from forge.net_call import HttpEvent, NetScope, http_details
from forge.schema import secret_key
from forge.toolmeta import ToolMeta

if TYPE_CHECKING:  # the forge's library (and its policy compiler): imported on first use
    from forge.library import ToolSpec
    from forge.runner import RunResult, SandboxRunner  # the sandbox: at the first call

Reveal = Callable[[TenantDirs, list[str], str], Awaitable[dict[str, str]]]
# what forge's linter lets a tool import (`forge.modules.ALLOWED`, which costs 18 ms to
# import; a test holds the two equal)
TOOL_IMPORTS = (
    "collections, csv, dataclasses, datetime, decimal, fractions, functools, hashlib, "
    "itertools, json, math, net, os, os.path, pathlib, random, re, statistics, string, "
    "textwrap, typing, uuid"
)
CREATE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "lowercase name, e.g. csv_totals"},
        "description": {"type": "string", "description": "one line: what the tool does"},
        "source": {
            "type": "string",
            "description": (
                "a Python module with one function run(...) whose parameters are annotated "
                "(str, int, float, bool, list, dict, optional with defaults) and whose "
                "docstring's first line describes it; files only by relative paths (the "
                "person's workspace: what they sent is in inbox/; a file written into "
                "outputs/ is handed to them with the answer); imports only from " + TOOL_IMPORTS
            ),
        },
    },
    "required": ["name", "description", "source"],
}


DRAFT_WIRE_PREFIX = "draft__"
OFFERED_DRAFTS = MAX_DRAFTS  # drafts offered as tools per turn: the newest
FULL_NOTICE = (
    "🔧 This chat holds the most unsaved tool drafts it may: keep one (/tool save <name>) "
    "or drop some (/tool drop <name>, /tool drop all) before another is written."
)
_CHATS = 1024  # chats whose drafts are remembered between prepare and tools_for
_MADE = 4096  # saved tools whose tool object is kept


def chat_key(turn: TurnContext) -> SessionKey:
    return SessionKey(turn.tenant, turn.inbound.channel, turn.inbound.chat)


def draft_wire(name: str) -> str:
    """`x` -> `draft__x`: a draft's wire name, never equal to a saved tool's `me__x`."""
    return DRAFT_WIRE_PREFIX + check_name(name)


def rejection_notice(name: str, findings: Sequence[Finding]) -> str:
    """The person's one line about a tool the forge refused: count and first problem."""
    shown = " ".join(name.split())
    shown = shown if len(shown) <= 41 else shown[:40] + "…"
    if not findings:
        return f"🔧 me.{shown} was not accepted."
    first, more = findings[0], " …" if len(findings) > 1 else ""
    count = f"{len(findings)} problem" + ("" if len(findings) == 1 else "s")
    message = " ".join(first.message.split())[:120]
    return f"🔧 me.{shown} was not accepted: {count} (line {first.line}: {message}{more})"


class ForgeTools:
    """A `ToolSource` for the forge; one per daemon."""

    def __init__(
        self,
        runner: SandboxRunner,
        drafts: DraftStore,
        catalog: ToolCatalog,
        reveal: Reveal,
        audit: AuditSink,
        masks: Callable[[TenantDirs], TextMask],
        room: Callable[[TenantDirs], Awaitable[int]] | None = None,
    ) -> None:
        self._runner = runner
        # what the tenant's quota still allows ([quota] tenant_bytes); a call may write at
        # most that, and never more than the forge's per-call cap
        self._room = room
        self._drafts = drafts
        self._read: OrderedDict[SessionKey, list[Draft]] = OrderedDict()  # per chat
        self._made: ByIdentity[ToolMeta, Tool] = ByIdentity(_MADE)  # an entry -> its tool
        self._masks = masks
        self._catalog = catalog
        self._reveal = reveal
        self._audit = audit
        self._create = FunctionTool(
            ToolSchema(
                "forge_create",
                "Write a small personal Python tool for this person. It is checked and kept "
                "for this chat; the person can keep it for good with /tool save <name>.",
                CREATE_SCHEMA,
            ),
            self._forge_create,
        )

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        tools: list[Tool] = [self._create]
        entries = self._catalog.entries(turn.dirs.tools)
        for entry in entries:
            tools.append(self._saved_tool(entry))
        kept = {entry.sha256 for entry in entries}
        for draft in self._read.get(chat_key(turn), ()):
            if draft.spec.sha256 not in kept:
                spec = draft.spec
                tools.append(FunctionTool(self._draft_schema(spec), self._draft_caller(spec)))
        return tools

    async def prepare(self, turn: TurnContext) -> None:
        """Read the chat's drafts, which `tools_for` offers (before a turn's first step)."""
        key = chat_key(turn)
        self._read[key] = await self._drafts.drafts(key, OFFERED_DRAFTS)
        self._read.move_to_end(key)
        while len(self._read) > _CHATS:
            self._read.popitem(last=False)

    def _draft_schema(self, spec: ToolSpec) -> ToolSchema:
        return ToolSchema(
            draft_wire(spec.name),
            f"draft of me.{spec.name}, not saved (runs without vault secrets) — {spec.description}",
            spec.schema,
        )

    def _saved_tool(self, entry: ToolMeta) -> Tool:
        """The tool of a saved entry, made once per entry object (the catalog hands the
        same objects while no metadata changed): the same tool and schema objects every
        step, which the agent loop's memo of the masked schemas keys on."""
        hit = self._made.get(entry)
        if hit is not None:
            return hit
        return self._made.put(
            entry, None, None, FunctionTool(self._schema(entry), self._caller(entry))
        )

    def _schema(self, entry: ToolMeta) -> ToolSchema:
        return ToolSchema(
            to_wire(entry.name), f"me.{entry.name} — {entry.description}", entry.schema
        )

    async def _forge_create(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        name, description, source = (args.get(k) for k in ("name", "description", "source"))
        if not (isinstance(name, str) and isinstance(description, str) and isinstance(source, str)):
            raise ToolError("name, description and source must all be strings")
        mask = self._masks(turn.dirs)  # stored text (source, description): through the masker
        masked = mask.mask(source)
        from forge.library import build_spec

        result = build_spec(name, mask.mask(description), masked)
        if result.tool is None:
            await self._audit.emit(
                "tool.created",
                turn.tenant,
                {"name": name[:64], "outcome": "rejected", "findings": len(result.findings)},
            )
            turn.notices.append(rejection_notice(name, result.findings))
            lines = [f"line {f.line}, col {f.col}: {f.message} [{f.code}]" for f in result.findings]
            raise ToolError(
                "the tool was not accepted; fix these and call forge_create again:\n"
                + "\n".join(lines)
            )
        try:
            written = await self._drafts.put(chat_key(turn), result.tool, masked)
        except DraftLimit as exc:
            await self._audit.emit(
                "tool.created",
                turn.tenant,
                {"name": name[:64], "outcome": "rejected", "findings": 0},
            )
            if FULL_NOTICE not in turn.notices:
                turn.notices.append(FULL_NOTICE)
            raise ToolError(str(exc)) from None
        await self._offer(turn, written.current)  # the next step offers the draft
        spec = written.current.spec
        if written.changed:
            old = written.previous.spec if written.previous is not None else None
            saved = self._saved_spec(turn, spec.name)
            turn.notices.append(
                rewrite_notice(spec.name, written.current.version, spec, old, saved)
            )
        await self._audit.emit(
            "tool.created",
            turn.tenant,
            {
                "name": spec.name,
                "hash": spec.sha256[:12],
                "outcome": "ok",
                "version": written.current.version,
            },
        )
        params = ", ".join(spec.schema.get("properties", {})) or "no parameters"
        secrets = f"; needs vault secrets: {', '.join(spec.secrets)}" if spec.secrets else ""
        return (
            f"Created {spec.name}({params}), sha256 {spec.sha256[:12]}{secrets}. It exists for "
            f"this chat only: test it now by calling {draft_wire(spec.name)} (a draft has no "
            f"vault secrets); tell the person they can keep it with /tool save {spec.name}"
        )

    async def _offer(self, turn: TurnContext, draft: Draft) -> None:
        """Put `draft` among the chat's drafts read for `tools_for` (the newest
        `OFFERED_DRAFTS`), or read them when none are remembered."""
        key = chat_key(turn)
        read = self._read.get(key)
        if read is None:
            await self.prepare(turn)
            return
        kept = [d for d in read if d.spec.name != draft.spec.name] + [draft]
        if len(kept) > OFFERED_DRAFTS:
            kept.remove(min(kept, key=lambda d: d.created_ms))
        self._read[key] = sorted(kept, key=lambda d: d.spec.name)
        self._read.move_to_end(key)

    def _saved_spec(self, turn: TurnContext, name: str) -> ToolSpec | None:
        from forge.library import ToolNotFound

        try:
            return self._catalog.library(turn.dirs.tools).show(name).spec
        except ToolNotFound:
            return None

    def _draft_caller(self, spec: ToolSpec) -> Callable[[Mapping[str, Any], TurnContext], Any]:
        async def call(args: Mapping[str, Any], turn: TurnContext) -> str:
            return await self.call_draft(spec.name, dict(args), turn)

        return call

    async def call_draft(self, name: str, params: dict[str, Any], turn: TurnContext) -> str:
        """Run this chat's draft `name`: no secrets, no usage; audited like a saved call."""
        draft = await self._drafts.latest(chat_key(turn), name)
        if draft is None:
            raise ToolError(f"there is no draft {name!r} in this chat; write it with forge_create")
        spec = draft.spec
        # no secrets and no network: the person has not consented to either yet
        no_net = NetScope(f"me.{name}", None, allowed=False)
        result = await self._runner.run(
            spec.source, params, turn.dirs.workspace, None, net=no_net,
            write_bytes=await self._write_bytes(turn),
        )  # fmt: skip
        await self._audited(turn, spec.name, spec.sha256, result)
        if result.ok:
            return json.dumps(result.result, ensure_ascii=False, default=str)
        hint = (
            f"\nA draft has no vault secrets and no network: save the tool first "
            f"(/tool save {name}) to use secrets or the hosts it declares."
            if spec.secrets or spec.network
            else ""
        )
        raise ToolError(
            f"draft me.{name} failed ({result.error_kind}): {result.error_message}{hint}"
        )

    async def _write_bytes(self, turn: TurnContext) -> int | None:
        """The call's write budget: the tenant's room left, or the runner's cap alone."""
        return None if self._room is None else await self._room(turn.dirs)

    async def _audited(self, turn: TurnContext, name: str, sha256: str, result: RunResult) -> None:
        """`tool.called`: name, hash prefix, duration and outcome; never arguments or output."""
        details: dict[str, object] = {
            "name": name,
            "hash": sha256[:12],
            "ms": int(result.duration_ms),
            "outcome": "ok" if result.ok else "error",
            "channel": turn.inbound.channel,
        }
        if not result.ok:
            details["error_kind"] = result.error_kind or "runtime"
        await self._audit.emit("tool.called", turn.tenant, details)

    def _caller(self, entry: ToolMeta) -> Callable[[Mapping[str, Any], TurnContext], Any]:
        async def call(args: Mapping[str, Any], turn: TurnContext) -> str:
            return await self.call(entry.name, dict(args), turn)

        return call

    async def call(self, name: str, params: dict[str, Any], turn: TurnContext) -> str:
        unstored: list[str] = []  # declared secrets the vault did not hold

        async def reveal(wanted: tuple[str, ...]) -> Mapping[str, str]:
            values = await self._reveal(turn.dirs, list(wanted), f"me.{name}")
            keys = {secret_key(k) for k in values}
            unstored.extend(n for n in wanted if secret_key(n) not in keys)
            return values

        library = self._catalog.library(turn.dirs.tools)

        async def on_http(event: HttpEvent) -> None:
            await self._audit.emit("tool.http", turn.tenant, http_details(event))

        from forge.calls import call_saved  # the forge's library: with the first call

        call = await call_saved(
            self._runner, library, name, params, turn.dirs.workspace, reveal,
            net=NetScope(f"me.{name}", on_http), write_bytes=await self._write_bytes(turn),
        )  # fmt: skip
        result = call.result
        await self._audited(turn, f"me.{name}", call.tool.spec.sha256 if call.tool else "", result)
        if result.ok:
            return json.dumps(result.result, ensure_ascii=False, default=str)
        message = unstored_message(result.error_message or "", unstored, turn.tenant)
        raise ToolError(f"me.{name} failed ({result.error_kind}): {message}")


# forge.policy.globals' `secret(NAME)` refusal: right for an undeclared name, half wrong
# for a declared one the vault does not hold (N14)
_NOT_AVAILABLE = re.compile(
    r"secret '([A-Za-z][A-Za-z0-9_]{0,63})' is not available: "
    r"declare it in SECRETS and store it in the vault"
)


def unstored_message(message: str, unstored: Sequence[str], tenant: str) -> str:
    """`message` with the refusal of a declared secret missing from the vault told as
    that: declared, not stored, and the operator's command that stores it."""
    keys = {secret_key(n) for n in unstored}

    def told(match: re.Match[str]) -> str:
        name = match.group(1)
        return runtime_message(name, tenant) if secret_key(name) in keys else match.group(0)

    return _NOT_AVAILABLE.sub(told, message) if keys else message

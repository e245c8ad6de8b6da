"""Memory consolidation, the async part: ask the chat's model, hold the proposal, apply it.

`Consolidator.propose` asks the chat's model (the fixed prompt of
`consolidate.py`, everything through the vault masker) for a plan, checks
it, screens the merged notes like any save, and shows the person what would
change with one action to apply it (`/memory tidy <id>`). A proposal is kept
per chat for an hour (one per chat, at most `MAX_CHATS` chats). `apply`
writes it as one journalled change (`/memory undo` reverts it) and records
`memory.consolidated` (counts and sizes, never names or notes). With no model
(offline) or a model that fails, the reply says the memory is full and how
to free space by hand.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bridge.core.ask import read_answer
from bridge.core.commands import Refused
from bridge.core.turn import PickModel
from bridge.memory.consolidate import (
    SYSTEM,
    Plan,
    PlanError,
    describe,
    index_fingerprint,
    parse_plan,
    request_text,
)
from bridge.memory.service import Memory
from bridge.memory.store import MemoryRefused, Provenance
from bridge.screening.screen import refusal, screen
from bridge.types.audit_sink import AuditSink
from bridge.types.backend import BackendError, ChatMessage, ModelRequest, offline
from bridge.types.messages import Action, Final, Inbound
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import TurnContext

log = logging.getLogger(__name__)
MAX_ANSWER = 20_000  # characters of the model's answer read
MAX_CHATS = 256
TTL_S = 3600.0
HOW_TO_FREE = (
    "To free space: /memory list shows the topics, /memory rm <name> deletes one "
    "(/memory undo brings it back), or ask me to merge related topics."
)


LETTERS, DIGITS = "abcdefghjkmnpqrstuvwxyz", "23456789"


def short_id() -> str:
    """Letter, digit, letter, digit: easy to type, never a word."""
    return "".join(secrets.choice(c) for c in (LETTERS, DIGITS, LETTERS, DIGITS))


class Masker(Protocol):
    def mask(self, text: str) -> str: ...


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    plan: Plan
    fingerprint: str
    made: float
    before: int  # index characters


class Consolidator:
    def __init__(
        self,
        memory: Memory,
        audit: AuditSink,
        masks: Callable[[TenantDirs], Masker],
        hold: PickModel | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._memory = memory
        self._audit = audit
        self._masks = masks
        self._hold = hold
        self._clock = clock
        self._pending: OrderedDict[tuple[str, str, str], Proposal] = OrderedDict()

    async def propose(self, dirs: TenantDirs, inbound: Inbound, lead: str = "") -> Final:
        """Ask the model for a tidy-up and show it with an action to apply it."""
        store = self._memory.store
        topics = store.topics(dirs)
        used = store.used(dirs)
        head = f"{lead}\n\n" if lead else ""
        if len(topics) < 2:
            return Final(f"{head}There is nothing to merge yet. {HOW_TO_FREE}", "command")
        try:
            mask = self._masks(dirs)
            ask = request_text(topics, used, store.memory_cap, mask.mask)
            answer = await self._ask(dirs, inbound, ask, mask)
        except _NoModel as exc:
            return Final(f"{head}Memory is full {self._memory.usage(dirs)}. {exc} {HOW_TO_FREE}")
        try:
            plan = parse_plan(answer, topics, store.topic_cap)
        except PlanError as exc:
            log.info("memory tidy-up proposal unusable: %s", exc)
            return Final(f"{head}The model's tidy-up could not be used ({exc}). {HOW_TO_FREE}")
        reasons = screen(_plan_text(plan), self._memory.secrets(dirs).values())
        if reasons:
            return Final(f"{head}{refusal('this tidy-up', reasons)} {HOW_TO_FREE}")
        key = (dirs.tenant, inbound.channel, inbound.chat)
        proposal = Proposal(short_id(), plan, index_fingerprint(topics), self._clock(), used)
        self._pending[key] = proposal
        self._pending.move_to_end(key)
        while len(self._pending) > MAX_CHATS:
            self._pending.popitem(last=False)
        text = head + describe(topics, plan, store.memory_cap)
        action = Action("Apply tidy-up", f"/memory tidy {proposal.id}")
        return Final(text, "command", actions=(action,))

    async def apply(self, dirs: TenantDirs, inbound: Inbound, pid: str) -> str:
        key = (dirs.tenant, inbound.channel, inbound.chat)
        proposal = self._pending.get(key)
        if proposal is None or proposal.id != pid.lower() or self._expired(proposal):
            raise Refused(
                f"No tidy-up {pid!r} is waiting in this chat (they last an hour). /memory tidy"
            )
        prov = Provenance("model", inbound.channel, inbound.chat, inbound.msg_id)
        try:
            after = await self._memory.consolidate(
                dirs, proposal.plan, proposal.fingerprint, prov, self._clock()
            )
        except MemoryRefused as exc:
            del self._pending[key]
            return str(exc)
        del self._pending[key]
        plan = proposal.plan
        details = {
            "merged": sum(len(m.sources) for m in plan.merges),
            "into": len(plan.merges),
            "dropped": len(plan.drops),
            "index_before": proposal.before,
            "index_after": after,
        }
        await self._audit.emit("memory.consolidated", dirs.tenant, details)
        return (
            f"Memory tidied: {details['merged']} topics merged into {details['into']}, "
            f"{details['dropped']} dropped. Now {self._memory.usage(dirs)}. "
            "/memory undo reverts it."
        )

    def _expired(self, proposal: Proposal) -> bool:
        return proposal.made < self._clock() - TTL_S

    async def _ask(self, dirs: TenantDirs, inbound: Inbound, ask: str, mask: Masker) -> str:
        if self._hold is None:
            raise _NoModel("No model is configured to propose a tidy-up.")
        turn = TurnContext(dirs, inbound, self._clock)
        async with self._hold(turn) as model:
            backend = model.backend
            if offline(backend):
                raise _NoModel("No model is configured to propose a tidy-up.")
            request = ModelRequest(
                mask.mask(SYSTEM), (ChatMessage("user", mask.mask(ask)),), tenant=dirs.tenant
            )
            try:
                return await read_answer(backend, request, MAX_ANSWER)
            except BackendError as exc:
                log.warning("memory tidy-up: the model failed (%s)", exc.kind)
                raise _NoModel("The model could not propose a tidy-up just now.") from None


class _NoModel(Exception):
    """No usable model; the message says so for the person."""


def _plan_text(plan: Plan) -> str:
    return "\n".join(f"{m.name}\n{m.description}\n{m.content}" for m in plan.merges)

"""What the agent loop has masked already, kept by the turn runner that owns it: `MaskMemo`.

Everything the model sees passes the tenant's vault masker first (`bridge.core.
agent`). Most of it is the same objects turn after turn: the session store hands
the same history objects, the prompt source the same system text while nothing
it shows changed, the tool sources the same tool and schema objects; and the
vault's masker is rebuilt only when the vault changed. So each masked form is
remembered per (object, masker, method) identities (`ByIdentity`: an entry
keeps its objects alive, so no id is reused while it is kept), and an unchanged
history, prompt or tool list is masked once, not on every turn. A `redact`
that is not a bound method (nothing to key on) is applied every time.

One `MaskMemo` belongs to one `TurnRunner` (so to one roost): nothing is kept
at module level, and two roosts in one process (tests) share nothing. Every
store in it is bounded (`HISTORY_MESSAGES`, `LAST_HISTORIES`, `LAST_OFFERS`,
...).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from bridge.core.identity_memo import ByIdentity
from bridge.types.backend import ChatMessage, ToolCallRequest, ToolSchema
from bridge.types.tools import Tool

Redact = Callable[[str], str]

K = TypeVar("K")
V = TypeVar("V")

HISTORY_MESSAGES = 8192  # messages kept masked, by (message, masker, method)
LAST_HISTORIES = 256  # chats whose masked history is kept whole (the session cache's size)
SYSTEMS = 1024  # system prompts kept masked
SCHEMA_TEXTS = 2048  # tool parameter schemas kept as JSON text
SCHEMAS = 2048  # tool schemas kept masked
LAST_OFFERS = 256  # maskers (tenants) whose last tool list is kept as the model saw it
_TAIL = 8  # last messages of a history compared one by one (`_common`)
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_-]")


class _LastUsed(Generic[K, V]):
    """The last value put per key, for at most `size` keys: the least recently put
    goes first."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int) -> None:
        self._entries: dict[K, V] = {}
        self._size = size

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        self._entries.pop(key, None)  # kept in order of use
        if len(self._entries) >= self._size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = value
        return value


def _common(now: tuple[ChatMessage, ...], last: tuple[ChatMessage, ...]) -> int:
    """How many first messages of `now` are those of `last` (the same objects, or equal
    ones: their masked forms are equal, `redacted` reads nothing else), or fewer. A
    turn's history differs from the last one's in its last few messages: those are
    looked at here one by one, from the end (at most `_TAIL`), and the prefix before
    them is compared whole, a loop in C that passes a pair of the same object by its
    identity alone; when it differs, an identity check per message finds the common
    prefix (a list of them, made in C)."""
    bound = min(len(now), len(last))
    k, floor = bound, max(0, bound - _TAIL)
    while k > floor and not (now[k - 1] is last[k - 1] or now[k - 1] == last[k - 1]):
        k -= 1
    if now[:k] == last[:k]:  # and now[k:bound] differ pairwise from last's
        return k
    same = list(map(operator.is_, now, last))
    return same.index(False) if False in same else len(same)


def masker_of(redact: Redact) -> tuple[object, object] | None:
    """(the masker object, its method) of a bound masker method: what the memos here are
    kept by; None when `redact` is not one (nothing to key on: mask every time). A
    turn's masker (`TurnMask`) names the one of now (`masker_now`), looked at in a loop
    rather than by a call again (twice a step, five times a turn)."""
    owner = getattr(redact, "__self__", None)
    now = getattr(owner, "masker_now", None)
    while now is not None:
        redact = now().mask
        owner = getattr(redact, "__self__", None)
        now = getattr(owner, "masker_now", None)
    func = getattr(redact, "__func__", None)
    return None if owner is None or func is None else (owner, func)


def redacted(message: ChatMessage, redact: Redact) -> ChatMessage:
    """`message` with its text and its tool calls' arguments masked, and their names and
    ids (`token`): the model chooses those too, so they may carry a secret."""
    calls = message.tool_calls
    return ChatMessage(
        message.role,
        redact(message.content),
        tuple(
            ToolCallRequest(token(c.id, redact), token(c.name, redact), redact(c.arguments))
            for c in calls
        )
        if calls
        else (),
        token(message.tool_call_id, redact),
        token(message.name, redact),
        message.images,  # bytes, nothing to mask
    )


def token(text: str, redact: Redact) -> str:
    """A tool call's name or id masked, still a name (`[vault:x]` -> `_vault_x_`): a call and
    its result masked by the same masker keep the same id, and the model and every backend
    can read it back."""
    if not text:
        return text
    masked = redact(text)
    return masked if masked == text else _NOT_A_NAME.sub("_", masked)


class MaskMemo:
    """The masked forms of histories, system prompts and tool lists, by identity."""

    def __init__(self) -> None:
        # a message -> the message masked by (masker, method)
        self._history: ByIdentity[ChatMessage, ChatMessage] = ByIdentity(HISTORY_MESSAGES)
        # (id(masker), id(first message)) -> (the masker, the method, the last history
        # that started with that message, their masked forms): one entry per chat
        self._last: _LastUsed[
            tuple[int, int], tuple[object, object, tuple[ChatMessage, ...], tuple[ChatMessage, ...]]
        ] = _LastUsed(LAST_HISTORIES)
        # a system prompt -> (it masked by (masker, method), {stable length: masked length})
        self._systems: ByIdentity[str, tuple[str, dict[int, int]]] = ByIdentity(SYSTEMS)
        self._schema_texts: ByIdentity[Mapping[str, Any], str] = ByIdentity(SCHEMA_TEXTS)
        self._schemas: ByIdentity[ToolSchema, ToolSchema] = ByIdentity(SCHEMAS)
        # id(masker) -> (the masker, the method, the tools, their schemas, by name, masked)
        self._offers: _LastUsed[
            int,
            tuple[
                object,
                object,
                tuple[Tool, ...],
                tuple[ToolSchema, ...],
                Mapping[str, Tool],
                tuple[ToolSchema, ...],
            ],
        ] = _LastUsed(LAST_OFFERS)

    @property
    def histories(self) -> int:
        """How many chats' masked histories are kept whole (at most `LAST_HISTORIES`)."""
        return len(self._last)

    def history(self, messages: Sequence[ChatMessage], redact: Redact) -> list[ChatMessage]:
        """`redacted` of each message, remembered per (message object, masker object): an
        unchanged history is not masked again each turn. The last history masked per
        (masker, first message) is kept too, so one per chat (a masker serves all of a
        tenant's chats, a chat's cached history keeps its first message object): the
        part of this one that starts with the same objects (a history grows by
        appending) is taken whole, found by tuple comparisons in C (`_common`); each
        message after it is one dict get and three identity checks."""
        masker = masker_of(redact)
        if masker is None:
            return [redacted(m, redact) for m in messages]
        owner, func = masker
        messages = tuple(messages)
        key = (id(owner), id(messages[0]) if messages else 0)
        last = self._last.get(key)
        out: list[ChatMessage] = []
        if last is not None and last[0] is owner and last[1] is func:
            out = list(last[3][: _common(messages, last[2])])
        out.extend(self._one(m, redact, owner, func) for m in messages[len(out) :])
        self._last.put(key, (owner, func, messages, tuple(out)))
        return out

    def masked_already(self, messages: Iterable[ChatMessage], redact: Redact) -> None:
        """Keep each of `messages` as its own masked form under the masker `redact` names
        now (nothing when it names none): their texts, tool calls' arguments, names and
        ids passed that masker already. A turn's stored messages are (`TurnRunner`: the
        session store keeps those very objects, masked by the turn's masker, and the
        session store, the recall index and the history page keep that text as final),
        so the next turns' histories take them as they are while the masker is the same
        object; a new masker (the vault changed, a screen refused a text) masks them
        again. Only a masker that says masking its output again changes nothing
        (`Masker.idempotent`); another's stored messages are masked again, as before."""
        masker = masker_of(redact)
        if masker is None:
            return
        owner, func = masker
        if not getattr(owner, "idempotent", False):
            return
        for m in messages:
            self._history.put(m, owner, func, m)

    def message(self, message: ChatMessage, redact: Redact) -> ChatMessage:
        """`history` of one message (leaving the masker's last history as it was)."""
        masker = masker_of(redact)
        if masker is None:
            return redacted(message, redact)
        return self._one(message, redact, *masker)

    def _one(
        self, message: ChatMessage, redact: Redact, owner: object, func: object
    ) -> ChatMessage:
        hit = self._history.get(message, owner, func)
        if hit is not None:
            return hit
        return self._history.put(message, owner, func, redacted(message, redact))

    def _system_entry(self, system: str, redact: Redact) -> tuple[str, dict[int, int]]:
        masker = masker_of(redact)
        if masker is None:
            return redact(system), {}
        hit = self._systems.get(system, *masker)
        if hit is not None:
            return hit
        return self._systems.put(system, *masker, (redact(system), {}))

    def system(self, system: str, redact: Redact) -> str:
        """`redact(system)`, remembered per (prompt, masker, method) objects: an unchanged
        prompt is masked once, not on every turn (nor twice more for its stable prefix,
        `stable`)."""
        return self._system_entry(system, redact)[0]

    def stable(self, system: str, stable: int, redact: Redact) -> int:
        """How long `system[:stable]` is once masked, when the masked prompt starts with
        it (the prefix a provider may cache), else 0; remembered with `system`."""
        if stable <= 0:
            return stable
        masked, prefixes = self._system_entry(system, redact)
        hit = prefixes.get(stable)
        if hit is None:
            head = redact(system[:stable])
            hit = prefixes[stable] = len(head) if masked.startswith(head) else 0
        return hit

    def _schema_text(self, parameters: Mapping[str, Any]) -> str:
        """The parameters as sorted JSON, encoded once per parameters object."""
        hit = self._schema_texts.get(parameters)
        if hit is not None:
            return hit
        text = json.dumps(parameters, ensure_ascii=False, sort_keys=True)
        return self._schema_texts.put(parameters, None, None, text)

    def schema(self, schema: ToolSchema, redact: Redact) -> ToolSchema:
        """A tool as the model sees it (its description and parameter schema masked),
        remembered per (schema, masker, method) objects: an unchanged tool list is not
        masked again each step (eight tools: about 0.07 ms a turn here)."""
        return self.schemas((schema,), redact)[0]

    def schemas(self, schemas: Iterable[ToolSchema], redact: Redact) -> tuple[ToolSchema, ...]:
        """`schema` of each, the masker looked up once for them all."""
        masker = masker_of(redact)
        if masker is None:
            return tuple(self._redacted_schema(schema, redact) for schema in schemas)
        owner, func = masker
        get, put = self._schemas.get, self._schemas.put
        out = []
        for schema in schemas:
            hit = get(schema, owner, func)
            if hit is None:
                hit = put(schema, owner, func, self._redacted_schema(schema, redact))
            out.append(hit)
        return tuple(out)

    def _redacted_schema(self, schema: ToolSchema, redact: Redact) -> ToolSchema:
        text = self._schema_text(schema.parameters)
        masked = redact(text)
        parameters = schema.parameters
        if masked != text:
            try:
                parameters = json.loads(masked)
            except ValueError:  # a value spelled across the JSON's own quotes: keep no schema
                parameters = {"type": "object"}
        return ToolSchema(schema.name, redact(schema.description), parameters)

    def offered(
        self, offered: Sequence[Tool], redact: Redact
    ) -> tuple[Mapping[str, Tool], tuple[ToolSchema, ...]]:
        """The step's tools by name and their schemas as the model sees them (`schemas`):
        when the same tool objects with the same schema objects are offered under the
        same masker as last time (the sources hand the same objects every step and
        turn), both are the ones made then, found by identity checks in C."""
        tools = tuple(offered)
        schemas = tuple([t.schema for t in tools])
        masker = masker_of(redact)
        if masker is None:
            return {t.schema.name: t for t in tools}, self.schemas(schemas, redact)
        owner, func = masker
        last = self._offers.get(id(owner))
        if (
            last is not None
            and last[0] is owner
            and last[1] is func
            and len(last[2]) == len(tools)
            and all(map(operator.is_, tools, last[2]))
            and all(map(operator.is_, schemas, last[3]))
        ):
            return last[4], last[5]
        by_name = {s.name: t for t, s in zip(tools, schemas, strict=True)}
        masked = self.schemas(schemas, redact)
        self._offers.put(id(owner), (owner, func, tools, schemas, by_name, masked))
        return by_name, masked

"""Memory consolidation, the pure part: the model's prompt, its proposal checked, the result.

When the index is full the model is asked, with the fixed prompt below, to
merge near-duplicate topics and drop stale ones; it answers with one JSON
object:

    {"merge": [{"from": ["a", "b"], "name": "c", "type": "user",
                "description": "…", "content": "…"}],
     "drop": ["x"]}

`parse_plan` accepts it only when every named topic exists, no topic is used
twice, every new topic is valid (`files.check_fields`) and the index gets
smaller; anything else is a `PlanError` that says why. `planned_topics` is
the memory after the plan; `describe` is what the person confirms (what
merges into what, what is dropped, size before and after).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bridge.memory.files import (
    MemoryInputError,
    Topic,
    check_fields,
    slug,
    usage_chars,
    usage_label,
)

MAX_PROMPT_CONTENT = 400  # characters of each topic's content shown to the model

SYSTEM = (
    "You tidy up a person's long-term memory notes, which have reached their size limit. "
    "Merge topics that say nearly the same thing into one, and drop topics that are stale "
    "(superseded, finished, or no longer true). Keep every fact that is still useful; never "
    "invent facts. Answer with one JSON object and nothing else:\n"
    '{"merge": [{"from": ["<existing name>", ...], "name": "<new name>", "type": '
    '"user|feedback|project|reference", "description": "<one line, at most 150 characters>", '
    '"content": "<the merged note>"}], "drop": ["<existing name>", ...]}\n'
    "Use the existing names exactly. Propose only changes that make the index shorter."
)


class PlanError(ValueError):
    """The model's proposal cannot be used; the message says why (for logs and the person)."""


@dataclass(frozen=True, slots=True)
class Merge:
    sources: tuple[str, ...]  # existing topic names
    name: str
    type: str
    description: str
    content: str


@dataclass(frozen=True, slots=True)
class Plan:
    merges: tuple[Merge, ...]
    drops: tuple[str, ...]


def index_fingerprint(topics: Sequence[Topic]) -> str:
    """Changes whenever a topic is added, removed or edited."""
    digest = hashlib.sha256()
    for topic in sorted(topics, key=lambda t: t.filename):
        digest.update(f"{topic.filename}\0{topic.description}\0{topic.content}\0".encode())
    return digest.hexdigest()[:16]


def _as_is(text: str) -> str:
    return text


def request_text(
    topics: Sequence[Topic], used: int, cap: int, mask: Callable[[str], str] = _as_is
) -> str:
    """The user message: the index and a short view of each topic. `mask` (the tenant's
    masker) sees each topic's content whole, before its whitespace is joined and it is
    cut: a value across the cut, or one holding a line break, is masked all the same."""
    lines = [f"The memory index is {used:,} characters; the cap is {cap:,}. Topics:"]
    for topic in sorted(topics, key=lambda t: (t.type, t.name.lower())):
        body = " ".join(mask(topic.content).split())
        if len(body) > MAX_PROMPT_CONTENT:
            body = body[:MAX_PROMPT_CONTENT] + " …"
        updated = topic.meta.get("updated", "?")
        lines.append(f"- {topic.name} ({topic.type}, updated {updated}): {topic.description}")
        lines.append(f"  content: {body}")
    return "\n".join(lines)


def _json_object(text: str) -> Mapping[str, object]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise PlanError("the model did not answer with a JSON object")
    try:
        raw = json.loads(text[start : end + 1])
    except ValueError:
        raise PlanError("the model's answer is not valid JSON") from None
    if not isinstance(raw, dict):
        raise PlanError("the model did not answer with a JSON object")
    return raw


def _strings(value: object, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{what} must be a list of names")
    return list(value)


def _merge(raw: object, topic_cap: int) -> Merge:
    if not isinstance(raw, dict):
        raise PlanError("each merge must be an object")
    fields = {k: raw.get(k) for k in ("name", "type", "description", "content")}
    if not all(isinstance(v, str) for v in fields.values()):
        raise PlanError("a merge needs name, type, description and content")
    name, type_, desc, content = (str(fields[k]).strip() for k in fields)
    try:
        check_fields(name, type_, desc, content, topic_cap)
        slug(name)
    except MemoryInputError as exc:
        raise PlanError(f"merge into {name!r}: {exc}") from None
    return Merge(tuple(_strings(raw.get("from"), "from")), name, type_, desc, content)


def parse_plan(text: str, topics: Sequence[Topic], topic_cap: int) -> Plan:
    """The model's answer as a checked `Plan` over `topics`; `PlanError` otherwise."""
    raw = _json_object(text)
    merges = tuple(_merge(m, topic_cap) for m in _list(raw.get("merge", [])))
    drops = tuple(_strings(raw.get("drop", []), "drop"))
    if not merges and not drops:
        raise PlanError("the model proposed no change")
    known = {slug(t.name) for t in topics}
    seen: set[str] = set()
    for name in [n for m in merges for n in m.sources] + list(drops):
        key = _slug(name)
        if key not in known:
            raise PlanError(f"there is no topic named {name!r}")
        if key in seen:
            raise PlanError(f"the topic {name!r} is used twice")
        seen.add(key)
    if any(not m.sources for m in merges):
        raise PlanError("a merge must name the topics it merges")
    targets = [slug(m.name) for m in merges]
    if len(set(targets)) != len(targets) or any(t in known - seen for t in targets):
        raise PlanError("a merged topic's name is already taken")
    plan = Plan(merges, drops)
    before = usage_chars(t.index_line() for t in topics)
    after = usage_chars(t.index_line() for t in planned_topics(topics, plan, {}))
    if after >= before:
        raise PlanError("the proposal does not make the memory smaller")
    return plan


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise PlanError("merge must be a list")
    return value


def _slug(name: str) -> str:
    try:
        return slug(name)
    except MemoryInputError:
        return ""


def planned_topics(topics: Sequence[Topic], plan: Plan, meta: Mapping[str, str]) -> list[Topic]:
    """The topics after `plan`: sources and drops gone, merged topics added."""
    gone = {_slug(n) for m in plan.merges for n in m.sources} | {_slug(n) for n in plan.drops}
    kept = [t for t in topics if slug(t.name) not in gone]
    made = [Topic(m.name, m.type, m.description, m.content, dict(meta)) for m in plan.merges]
    return kept + made


def describe(topics: Sequence[Topic], plan: Plan, cap: int) -> str:
    """What the person confirms: merges, drops, index size before and after."""
    before = usage_chars(t.index_line() for t in topics)
    after = usage_chars(t.index_line() for t in planned_topics(topics, plan, {}))
    lines = ["Proposed tidy-up of your memory:"]
    for m in plan.merges:
        names = ", ".join(f"'{n}'" for n in m.sources)
        lines.append(f"• merge {names} → '{m.name}' ({m.type}): {m.description}")
    lines += [f"• drop '{name}'" for name in plan.drops]
    lines.append(
        f"Index {usage_label(before, cap)} → {usage_label(after, cap)}. Nothing changes until "
        "you apply it; /memory undo reverts it afterwards."
    )
    return "\n".join(lines)

"""Import proposals: facts the person stated in imported chats wait for their yes.

Through the real CLI (`roost import`, then `/memory proposals`, `/memory keep`,
`/memory decline` with `roost send`), and the pure parts: which sentences are
facts (`memory.facts`), which become proposals (`memory.proposals.pick`).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.memory.facts import fact_subject, stated_facts
from bridge.memory.files import Topic
from bridge.memory.proposals import CAP, Candidate, Proposal, ProposalBox, declined_key, pick
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, run


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


def _row(i: int, role: str, text: str, day: int) -> dict[str, str]:
    return {
        "conversation": "life",
        "id": str(i),
        "role": role,
        "text": text,
        "time": f"2023-03-{day:02d}T09:00:00",
    }


def history(path: Path) -> Path:
    rows = [
        _row(1, "user", "Hi! I live in Bonn with two cats. Can you help me plan?", 1),
        _row(2, "assistant", "My name is Assistant and I live in the cloud.", 1),
        _row(3, "user", "Do you think I work as a nurse?", 2),
        _row(4, "user", 'My sister said "I\'m allergic to cats" once.', 2),
        _row(5, "user", "Update: I moved to Leipzig last week. I'm vegetarian now.", 20),
        _row(6, "user", "My password is hunter2 and I work at ghp_" + "a" * 36 + " Corp.", 21),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


async def test_import_offers_proposals_and_nothing_is_saved_without_a_yes(
    home: Path, tmp_path: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    code, out, err = await run(
        ["import", "--tenant", "alice", str(history(tmp_path / "h.jsonl"))], env
    )
    assert code == 0, err
    assert "2 new memory proposals (2 waiting in all): /memory proposals" in out

    code, out, _ = await run(["send", "--tenant", "alice", "/memory list"], env)
    assert "Memory is empty" in out  # nothing became a note by itself

    code, out, _ = await run(["send", "--tenant", "alice", "/memory proposals"], env)
    assert code == 0
    assert "where I live: Update: I moved to Leipzig last week." in out  # the newest wins
    assert "my diet: I'm vegetarian now." in out
    assert "Bonn" not in out and "nurse" not in out and "allergic" not in out
    assert "ghp_" not in out and "Assistant" not in out
    ids = dict(re.findall(r"• (\w{4}): ([^:]+):", out))
    home_id = next(pid for pid, name in ids.items() if name == "where I live")
    diet_id = next(pid for pid, name in ids.items() if name == "my diet")

    code, out, _ = await run(["send", "--tenant", "alice", f"/memory keep {home_id}"], env)
    assert "Kept as 'where I live'" in out
    code, out, _ = await run(["send", "--tenant", "alice", f"/memory decline {diet_id}"], env)
    assert "Declined" in out
    code, out, _ = await run(["send", "--tenant", "alice", "/memory list"], env)
    assert "where I live (user): Update: I moved to Leipzig last week." in out
    assert "vegetarian" not in out
    code, out, _ = await run(["send", "--tenant", "alice", "/memory proposals"], env)
    assert "No memory proposals wait" in out

    # the same file again: what a topic now covers (home) is not offered again
    code, out, _ = await run(["import", "--tenant", "alice", str(tmp_path / "h.jsonl")], env)
    assert code == 0
    assert "0 new memory proposals" in out  # home: a topic covers it; diet: declined
    code, out, _ = await run(["send", "--tenant", "alice", "/memory proposals"], env)
    assert "No memory proposals wait" in out
    declined = home / "tenants" / "alice" / "global" / "memory" / ".proposals-declined.json"
    assert "vegetarian" not in declined.read_text()  # a hash is remembered, not the text

    # a later import: the declined statement again is not offered; a new one about diet is
    later = tmp_path / "later.jsonl"
    later.write_text(
        json.dumps(_row(7, "user", "I'm vegetarian now.", 22) | {"conversation": "later"})
        + "\n"
        + json.dumps(_row(8, "user", "Ok, now I'm vegan.", 23) | {"conversation": "later2"})
        + "\n"
    )
    code, out, _ = await run(["import", "--tenant", "alice", str(later)], env)
    assert code == 0
    assert "1 new memory proposals" in out
    code, out, _ = await run(["send", "--tenant", "alice", "/memory proposals"], env)
    assert "my diet: Ok, now I'm vegan." in out
    code, out, _ = await run(["send", "--tenant", "alice", "/memory decline all"], env)
    assert "Declined 1 memory proposals" in out
    code, out, _ = await run(["import", "--tenant", "alice", str(later)], env)
    assert "0 new memory proposals" in out  # declined with "all": remembered too
    chain = (home / "audit" / "chain.jsonl").read_text()
    assert "Leipzig" not in chain and "vegetarian" not in chain

    # roost forget removes the record with the rest: the same file is offered afresh
    code, out, err = await run(["forget", "--tenant", "alice", "--yes"], env)
    assert code == 0, err
    assert not declined.exists()
    code, out, _ = await run(["import", "--tenant", "alice", str(tmp_path / "h.jsonl")], env)
    assert "2 new memory proposals" in out


def test_stated_facts_are_the_persons_own_statements() -> None:
    assert stated_facts("I live in Leipzig. What's the weather?") == [
        ("home", "I live in Leipzig.")
    ]
    assert stated_facts("Ich wohne in Köln und arbeite als Lehrerin.") == [
        ("home", "Ich wohne in Köln und arbeite als Lehrerin.")
    ]
    assert stated_facts("My wife Anna is a doctor.") == [("partner", "My wife Anna is a doctor.")]
    assert stated_facts("Do I live in Leipzig?") == []
    assert stated_facts('She wrote "I live in Leipzig" on the card.') == []
    assert stated_facts("If I moved to Leipzig, would it be cheaper.") == []
    assert stated_facts("The office lives in Leipzig.") == []  # not about the speaker
    assert stated_facts("Nothing to see here.") == []
    assert fact_subject("Lives in Leipzig since 2023") == "home"
    assert fact_subject("prefers tabs") == ""


def test_an_abbreviation_or_an_initial_does_not_end_the_sentence() -> None:
    """A newcomer's import proposed "… my dentist is Dr." (s35 N14): the name was lost."""
    assert stated_facts("My dentist is Dr. Sousa. I live in Lisbon.") == [
        ("home", "I live in Lisbon.")
    ]
    assert stated_facts("I work at J. Smith Ltd. in Porto") == [
        ("work", "I work at J. Smith Ltd. in Porto")
    ]
    assert stated_facts("I live in St. Gallen, e.g. near the lake. My dog is Rex!") == [
        ("home", "I live in St. Gallen, e.g. near the lake."),
        ("pet", "My dog is Rex!"),
    ]
    assert stated_facts("Ich wohne in Berlin, z.B. in Mitte. Mein Hund heißt Bello.") == [
        ("home", "Ich wohne in Berlin, z.B. in Mitte."),
        ("pet", "Mein Hund heißt Bello."),
    ]


def _topic(desc: str) -> Topic:
    return Topic("home city", "user", desc, desc, {})


def test_pick_keeps_the_newest_per_subject_skips_covered_and_caps() -> None:
    found = [
        Candidate("home", "I live in Bonn.", 1, "a"),
        Candidate("home", "I moved to Leipzig.", 5, "b"),
        Candidate("diet", "I'm vegan.", 3, "a"),
        Candidate("work", "I work as a nurse.", 2, "a"),
    ]
    got = pick(found, [], [])
    assert [(p.subject, p.sentence) for p in got] == [
        ("home", "I moved to Leipzig."),
        ("diet", "I'm vegan."),
        ("work", "I work as a nurse."),
    ]
    assert len({p.id for p in got}) == 3
    covered = pick(found, [_topic("Lives in Dresden")], [Proposal("a2b3", "diet", "x", 0, "c")])
    assert [p.subject for p in covered] == ["work"]
    many = [Candidate(s, f"my {s}", 0, "c") for s in "abcdefghijklmnop"]
    assert len(pick(many, [], [])) == CAP
    waiting = [Proposal(f"a{i}b{i}", f"s{i}", "x", 0, "c") for i in range(CAP)]
    assert pick(found, [], waiting) == []


def test_box_take_is_once_and_survives_a_bad_file(tmp_path: Path) -> None:
    box = ProposalBox(tmp_path / "memory")
    added = box.offer([Candidate("diet", "I'm vegan.", 3, "a")], [])
    assert box.waiting() == added
    assert box.take(added[0].id.upper()) == added[0]
    assert box.take(added[0].id) is None
    assert (tmp_path / "memory" / ".proposals.json").stat().st_mode & 0o777 == 0o600
    (tmp_path / "memory" / ".proposals.json").write_text("{not json")
    assert box.waiting() == []


def test_a_declined_statement_is_not_proposed_again_nor_an_older_one_instead(
    tmp_path: Path,
) -> None:
    found = [
        Candidate("home", "I live in Bonn.", 1, "a"),
        Candidate("home", "I moved to  LEIPZIG.", 5, "b"),
        Candidate("diet", "I'm vegan.", 3, "a"),
    ]
    declined = frozenset({declined_key("home", "i moved to leipzig.")})  # case, spacing
    assert [p.sentence for p in pick(found, [], [], declined=declined)] == ["I'm vegan."]

    box = ProposalBox(tmp_path / "memory")
    first = box.offer(found, [])
    assert {p.subject for p in first} == {"home", "diet"}
    diet = next(p for p in first if p.subject == "diet")
    assert box.decline(diet.id.upper()) == diet
    assert box.decline(diet.id) is None
    assert box.decline_all() == 1
    assert box.waiting() == []
    assert box.offer(found, []) == []  # the same statements again: nothing
    again = box.offer([Candidate("diet", "I eat fish again.", 9, "c")], [])
    assert [p.sentence for p in again] == ["I eat fish again."]  # a new statement is
    path = tmp_path / "memory" / ".proposals-declined.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert "vegan" not in path.read_text() and "Leipzig" not in path.read_text()
    path.write_text("{not json")
    assert box.declined() == []

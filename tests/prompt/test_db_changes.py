"""`TableChanges`: what the prompt's memo is told of a tenant's rows in roost.db.

A real migrated roost.db; writes through the daemon's connection (by any code, the
stores' own methods or plain SQL), through another connection, and rolled back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bridge.core.db import connect
from bridge.loadout.chat_settings import ChatSettings
from bridge.loadout.db_changes import TableChanges
from bridge.skills.grades import SkillGrades

TABLES = ("chat_settings", "skill_grades", "style_bullets")


def test_every_write_of_a_tenants_rows_moves_its_token_and_only_its(tmp_path: Path) -> None:
    db = connect(tmp_path / "roost.db")
    changes = TableChanges.install(db, TABLES)

    def token(table: str, tenant: str) -> object:
        return changes.token(changes.version(), (table,), tenant)

    before = {t: token("chat_settings", t) for t in ("alice", "bob")}
    ChatSettings(db).set("alice", "web", "c1", "persona", "forge")
    assert token("chat_settings", "alice") != before["alice"]
    assert token("chat_settings", "bob") == before["bob"]
    seen = token("chat_settings", "alice")
    db.execute("UPDATE chat_settings SET tenant='bob' WHERE tenant='alice'")  # a row moves
    assert token("chat_settings", "alice") != seen
    assert token("chat_settings", "bob") != before["bob"]
    grades = token("skill_grades", "alice")
    SkillGrades(db).apply("alice", "s1", "approval", 1.0)
    assert token("skill_grades", "alice") != grades
    seen = token("skill_grades", "alice")
    db.execute("BEGIN")
    db.execute("DELETE FROM skill_grades WHERE tenant='alice'")
    db.execute("ROLLBACK")  # counted all the same: one needless query, never a stale row
    assert token("skill_grades", "alice") != seen
    db.close()


def test_another_connections_commit_moves_every_token(tmp_path: Path) -> None:
    db = connect(tmp_path / "roost.db")
    changes = TableChanges.install(db, TABLES)
    seen = changes.token(changes.version(), TABLES, "alice")
    assert changes.token(changes.version(), TABLES, "alice") == seen
    other = sqlite3.connect(tmp_path / "roost.db", isolation_level=None)
    other.execute("INSERT INTO chat_settings VALUES ('alice', 'web', 'c1', 'audience', 'x')")
    other.close()
    assert changes.token(changes.version(), TABLES, "alice") != seen
    db.close()


def test_two_counters_on_one_connection_both_count(tmp_path: Path) -> None:
    db = connect(tmp_path / "roost.db")
    first, second = TableChanges.install(db, TABLES), TableChanges.install(db, TABLES)
    a = first.token(first.version(), ("chat_settings",), "alice")
    b = second.token(second.version(), ("chat_settings",), "alice")
    ChatSettings(db).set("alice", "web", "c1", "persona", "forge")
    assert first.token(first.version(), ("chat_settings",), "alice") != a
    assert second.token(second.version(), ("chat_settings",), "alice") != b
    assert first.token(first.version(), ("turn_log",), "alice") is None  # not counted
    db.close()


def test_a_table_that_is_not_there_is_not_counted(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "bare.db")
    db.execute("CREATE TABLE chat_settings (tenant TEXT, channel TEXT, chat TEXT, key TEXT)")
    changes = TableChanges.install(db, ("chat_settings", "style_bullets"))
    assert changes.token(changes.version(), ("chat_settings",), "alice") is not None
    assert changes.token(changes.version(), ("style_bullets",), "alice") is None
    db.close()

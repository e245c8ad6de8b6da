"""The realistic tool corpus: each tool in tools/ with the files of a fresh
workspace, its params, the result it must return and the files it must leave.

The expected values are what plain CPython gives with the workspace as the
current directory (test_corpus.py checks that too), so the sandbox must match
real `os`, `os.path` and `pathlib` behaviour, not the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).parent / "tools"
MTIME = 1_699_956_000  # 2023-11-14 10:00 UTC: the same date in any time zone within 10 h


@dataclass(frozen=True)
class Case:
    tool: str
    params: dict[str, Any]
    expected: Any
    files: dict[str, str] = field(default_factory=dict)
    after: dict[str, str | None] = field(default_factory=dict)  # None: must be absent
    mtimes: dict[str, int] = field(default_factory=dict)

    def source(self) -> str:
        return (TOOLS / f"{self.tool}.py").read_text()


CASES = [
    Case(
        "expense_log",
        {"amount": 4.5, "category": "food", "day": "2024-05-01"},
        {"category": "food", "total": 16.5},
        files={"data/finance/expenses.csv": "date,category,amount\n2024-04-30,food,12.0\n"},
        after={
            "data/finance/expenses.csv": "date,category,amount\n2024-04-30,food,12.0\n"
            "2024-05-01,food,4.5\n"
        },
    ),
    Case(
        "expense_log",
        {"amount": 3.0, "category": "bus", "day": "2024-05-02"},
        {"category": "bus", "total": 3.0},
        after={"data/finance/expenses.csv": "date,category,amount\n2024-05-02,bus,3.0\n"},
    ),
    Case(
        "note_titles",
        {},
        [{"file": "a.md", "title": "Alpha"}, {"file": "b.md", "title": "Beta notes"}],
        files={
            "notes/a.md": "# Alpha\nbody\n",
            "notes/b.md": "## Beta notes\n",
            "notes/c.txt": "x",
        },
    ),
    Case(
        "list_files",
        {},
        [{"name": "a.txt", "bytes": 3}, {"name": "b.csv", "bytes": 5}],
        files={"a.txt": "abc", "b.csv": "1,2\n\n", "sub/c.txt": "zz"},
    ),
    Case(
        "disk_usage",
        {},
        {
            ".": {"files": 1, "bytes": 2},
            "docs": {"files": 2, "bytes": 7},
            "img": {"files": 1, "bytes": 4},
        },
        files={"top.txt": "hi", "docs/a.md": "abc", "docs/deep/b.md": "defg", "img/x.png": "1234"},
    ),
    Case(
        "settings_update",
        {"key": "theme", "value": "dark"},
        {"lang": "de", "theme": "dark"},
        files={"config/settings.json": '{"lang": "de", "theme": "light"}'},
        after={"config/settings.json": '{\n  "lang": "de",\n  "theme": "dark"\n}'},
    ),
    Case(
        "settings_update",
        {"key": "lang", "value": "en"},
        {"lang": "en"},
        after={"config/settings.json": '{\n  "lang": "en"\n}'},
    ),
    Case(
        "todo_add",
        {"task": "buy milk"},
        {"open": ["call mum", "buy milk"], "count": 3},
        files={
            "todo.json": '[{"task": "call mum", "done": false}, {"task": "pay rent", "done": true}]'
        },
    ),
    Case(
        "journal_entry",
        {"text": "ran 5k", "when": "2024-03-09T07:15:00"},
        {"file": "journal/2024/2024-03-09.md", "entries": 2},
        files={"journal/2024/2024-03-09.md": "- 06:00 woke up\n"},
        after={"journal/2024/2024-03-09.md": "- 06:00 woke up\n- 07:15 ran 5k\n"},
    ),
    Case(
        "sales_by_category",
        {},
        {"books": 27.5, "toys": 10.0},
        files={"sales.csv": "category,amount\nbooks,20\ntoys,10\nbooks,7.5\n"},
    ),
    Case(
        "cleanup_tmp",
        {},
        {"removed": ["a.tmp", "b.tmp"], "left": ["keep.txt", "sub.tmp"]},
        files={
            "scratch/a.tmp": "",
            "scratch/b.tmp": "x",
            "scratch/keep.txt": "",
            "scratch/sub.tmp/x": "",
        },
        after={"scratch/a.tmp": None, "scratch/keep.txt": ""},
    ),
    Case(
        "archive_reports",
        {"prefix": "2024"},
        ["archive/2024_feb.txt", "archive/2024_jan.txt"],
        files={"reports/jan.txt": "j", "reports/feb.txt": "f", "reports/notes.md": "n"},
        after={"archive/2024_jan.txt": "j", "reports/jan.txt": None, "reports/notes.md": "n"},
    ),
    Case(
        "file_info",
        {"name": "docs/report.pdf"},
        {"name": "report.pdf", "is_file": True, "size": 11, "modified": "2023-11-14"},
        files={"docs/report.pdf": "%PDF-1.4 xx"},
        mtimes={"docs/report.pdf": MTIME},
    ),
    Case("file_info", {"name": "missing.txt"}, {"error": "missing.txt not found"}),
    Case(
        "grep_notes",
        {"needle": "milk"},
        ["a.txt:2: Milk and eggs", "sub/deeper/c.txt:1: no milk left"],
        files={
            "a.txt": "shopping\nMilk and eggs\n",
            "sub/b.md": "milk",
            "sub/deeper/c.txt": "no milk left\n",
        },
    ),
    Case(
        "word_count",
        {},
        {"one": 3, "two": 1},
        files={"texts/one.txt": "a b c", "texts/two.TXT": "word", "texts/skip.md": "x y"},
    ),
    Case(
        "backup_file",
        {"name": "db/data.json"},
        {"backup": "db/data.json.bak", "bytes": 9, "parent": "db"},
        files={"db/data.json": '{"a": 1}\n'},
        after={"db/data.json.bak": '{"a": 1}\n'},
    ),
    Case(
        "habit_tracker",
        {"habit": "run", "day": "2024-01-03"},
        {"habit": "run", "streak": 3},
        files={"habits.csv": "day,habit\n2024-01-01,run\n2024-01-02,run\n2023-12-30,run\n"},
    ),
    Case(
        "recent_files",
        {"limit": 2},
        ["new.txt", "mid.txt"],
        files={"old.txt": "", "mid.txt": "", "new.txt": "", "dir/x": ""},
        mtimes={"old.txt": MTIME, "mid.txt": MTIME + 60, "new.txt": MTIME + 120},
    ),
    Case(
        "new_project",
        {"name": "garden", "description": "Veggie beds"},
        ["garden", "kitchen"],
        files={"projects/kitchen/README.md": "# kitchen\n", "projects/file.txt": ""},
        after={"projects/garden/README.md": "# garden\n\nVeggie beds\n"},
    ),
    Case(
        "path_parts",
        {"path": "docs/./2024/report.final.pdf"},
        {
            "dir": "docs/./2024",
            "base": "report.final.pdf",
            "head": "docs/./2024",
            "stem": "report.final",
            "ext": ".pdf",
            "norm": "docs/2024/report.final.pdf",
            "rel": "b/c.txt",
            "joined": "x/y/z.csv",
        },
    ),
    Case(
        "merge_json",
        {},
        {"a": 1, "b": 3, "c": 4},
        files={
            "data/1.json": '{"a": 1, "b": 2}',
            "data/2.json": '{"b": 3, "c": 4}',
            "data/x.txt": "{}",
        },
        after={"data/merged.json": '{"a": 1, "b": 3, "c": 4}'},
    ),
    Case(
        "rotate_log",
        {"line": "started", "max_bytes": 10},
        {"rotated": True, "size": 8, "old": True},
        files={"app.log": "a long line that is over ten bytes\n"},
        after={"app.log": "started\n", "app.log.1": "a long line that is over ten bytes\n"},
    ),
    Case(
        "where_am_i",
        {"name": "hello.txt"},
        {"inside": True, "same": True, "exists": True, "text": "hello", "is_abs": True},
    ),
    Case(
        "wiki_index",
        {},
        "# Index\n- cooking/pasta\n- cooking/soup\n- wiki/home\n",
        files={
            "wiki/home.md": "",
            "wiki/cooking/pasta.md": "",
            "wiki/cooking/soup.md": "",
            "wiki/x.txt": "",
        },
    ),
    Case(
        "bookmarks",
        {"url": "https://example.org", "title": "Example"},
        2,
        files={"bookmarks.json": '[{"url": "https://a.b", "title": "A"}]'},
    ),
    Case(
        "inventory",
        {"item": "hammer"},
        ["hammer", "saw"],
        files={"inventory/saw.txt": ""},
        after={"inventory/hammer.txt": ""},
    ),
    Case(
        "inventory",
        {"item": "saw", "remove": True},
        [],
        files={"inventory/saw.txt": ""},
        after={"inventory/saw.txt": None},
    ),
    Case(
        "rename_photos",
        {},
        ["notes.txt", "photo_001.jpg", "photo_002.png"],
        files={"photos/IMG_2.PNG": "p", "photos/IMG_1.JPG": "j", "photos/notes.txt": ""},
        after={"photos/photo_001.jpg": "j", "photos/IMG_1.JPG": None},
    ),
]


def seed(workspace: Path, case: Case) -> None:
    """Write the case's files (and their mtimes) into a fresh workspace."""
    import os

    for rel, text in case.files.items():
        path = workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel, stamp in case.mtimes.items():
        os.utime(workspace / rel, (stamp, stamp))


def check_after(workspace: Path, case: Case) -> dict[str, Any]:
    """The files the case names, as they are now (None if absent; newlines
    read universally, so a csv module's \\r\\n reads as \\n)."""
    return {
        rel: (workspace / rel).read_text() if (workspace / rel).exists() else None
        for rel in case.after
    }

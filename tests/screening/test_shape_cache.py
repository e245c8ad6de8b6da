"""Shipped patterns' shapes kept across processes: equal shapes, tied to the code, shipped only."""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path

import pytest

from bridge.screening import injection, secret_context, secret_rules, secret_speech, shape_cache
from bridge.screening.regex_shape import shape
from tests.fresh import env_without, python_c

SOURCE = Path(shape_cache.regex_shape.__file__).read_bytes()


def shipped_patterns() -> list[re.Pattern[str]]:
    scanners = (
        *secret_rules.scanners(),
        *secret_context.scanners(),
        *secret_speech.scanners(),
        *injection.scanners(),
    )
    return [s.pattern for s in scanners]


@pytest.fixture(autouse=True)
def bytecode_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte-code writing on, as `make test` runs (PYTHONDONTWRITEBYTECODE may be set here)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def test_every_shipped_shape_read_back_equals_the_one_worked_out(tmp_path: Path) -> None:
    path = tmp_path / "shapes.marshal"
    patterns = shipped_patterns()
    assert len(patterns) > 100
    first = shape_cache.Shapes(path, SOURCE)
    made = [first.get(p) for p in patterns]
    first.save()
    second = shape_cache.Shapes(path, SOURCE)  # as the next process reads the file
    assert second.entries.keys() >= {(p.pattern, p.flags) for p in patterns}
    assert [second.get(p) for p in patterns] == made == [shape(p) for p in patterns]
    assert second.added == 0


def test_a_file_of_another_shape_code_or_interpreter_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "shapes.marshal"
    pattern = re.compile(r"ghp_[A-Za-z0-9]{36}")
    first = shape_cache.Shapes(path, SOURCE)
    first.get(pattern)
    first.save()
    edited = shape_cache.Shapes(path, SOURCE + b"\n# an edit\n")  # regex_shape.py changed
    assert edited.entries == {}
    path.write_bytes(b"roost-shape 1|another python|x\n" + path.read_bytes().split(b"\n", 1)[1])
    assert shape_cache.Shapes(path, SOURCE).entries == {}
    path.write_bytes(shape_cache.header(SOURCE) + b"\x00garbage")
    assert shape_cache.Shapes(path, SOURCE).entries == {}  # damaged: ignored


def test_only_a_shipped_scanner_has_its_shape_kept_and_the_next_process_reads_it(
    tmp_path: Path,
) -> None:
    """A scanner of a pattern built from a secret works its shape out and keeps nothing;
    a shipped one's shape is in the file the next process reads (`cache_path`'s folder
    is the package's: the probe points it at tmp_path)."""
    secret = f"sk{uuid.uuid4().hex}"
    shipped_word = f"shipped{uuid.uuid4().hex[:8]}"
    probe = (
        "import re, sys\n"
        "from pathlib import Path\n"
        "from bridge.screening import shape_cache\n"
        "shape_cache.cache_path = lambda folder, stem: Path(sys.argv[1]) / (stem + '.marshal')\n"
        "from bridge.screening.windowed import Scanner\n"
        "mine = Scanner(re.compile(re.escape(sys.argv[2]) + '[0-9]{2}'))\n"
        "ours = Scanner(re.compile(sys.argv[3] + '[a-z]{3}'), shipped=True)\n"
        "print(mine.search('a ' + sys.argv[2] + '42') is not None,"
        " ours.search('b ' + sys.argv[3] + 'abc') is not None,"
        " shape_cache._shapes().added)\n"
    )
    env = env_without("PYTHONDONTWRITEBYTECODE")
    out = python_c(probe, str(tmp_path), secret, shipped_word, env=env).stdout.split()
    assert out == ["True", "True", "1"]  # one shape worked out: the shipped one's
    kept = (tmp_path / "regex-shape.marshal").read_bytes()
    assert secret.encode() not in kept and shipped_word.encode() in kept
    again = python_c(probe, str(tmp_path), secret, shipped_word, env=env).stdout.split()
    assert again == ["True", "True", "0"]  # read from the file: none worked out again

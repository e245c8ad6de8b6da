"""The path gate refuses every name the daemon could not show as it is (atk3 F3):
the same set `bridge.senses.outputs.shown_name` replaces by `_` (Unicode Cc, Cf,
Cs, Zl, Zp: controls, bidirectional marks and overrides, zero widths, the soft
hyphen, line and paragraph separators, lone surrogates). Before, the gate knew
only C0/C1 controls, U+202A-202E, U+2066-2069 and surrogates, so a tool could
make `a\\u2028b.txt` (split by `str.splitlines()`) or `inv\\u200fcod.exe`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.senses.outputs import shown_name
from forge.pathgate import PathDenied, PathGate
from forge.pathnames import components
from forge.runner import SandboxRunner

ATTACKER_NAMES = [
    "a\u2028b.txt",  # line separator
    "q\u2029.txt",  # paragraph separator
    "inv\u200fcod.exe",  # right-to-left mark
    "l\u200er.txt",  # left-to-right mark
    "x\u061cy",  # Arabic letter mark
    "r\u206a.txt",  # deprecated format controls U+206A-206F
    "r\u206f.txt",
    "z\ufeff.txt",  # zero width no-break space
    "w\u200b.txt",  # zero width space
    "s\u00ad.txt",  # soft hyphen
    "d\u200b/x.txt",  # in a folder's name too
]


@pytest.mark.parametrize("name", ATTACKER_NAMES, ids=ascii)
def test_the_gate_refuses_names_outputs_could_not_show(tmp_path: Path, name: str) -> None:
    gate = PathGate(tmp_path)
    with pytest.raises(PathDenied, match="use names that print as they are") as refused:
        gate.open(name, "w").close()
    assert f"U+{ord(next(c for c in name if not c.isascii())):04X}" in str(refused.value)
    with pytest.raises(PathDenied, match="use names that print as they are"):
        gate.mkdir(name)
    (tmp_path / "ok.txt").write_text("x")
    with pytest.raises(PathDenied, match="use names that print as they are"):
        gate.rename("ok.txt", name)
    assert sorted(os.listdir(tmp_path)) == ["ok.txt"]  # nothing made


def test_the_gate_and_outputs_agree_on_every_character() -> None:
    """One definition: a character the gate takes in a name is shown as it is, and
    one it refuses is one `shown_name` would have replaced (the Basic Multilingual
    Plane and the supplementary planes' format characters)."""
    root = "/ws"
    disagree = []
    for point in [*range(0x10000), 0x110BD, 0x1D173, 0xE0001, 0xE0020, 0xE007F, 0x1F989]:
        ch = chr(point)
        if ch in "/\x00.":
            continue
        try:
            components(f"a{ch}b", root)
            taken = True
        except PathDenied:
            taken = False
        if taken != (shown_name(ch) == ch):
            disagree.append(f"U+{point:04X}")
    assert not disagree, disagree


@pytest.mark.asyncio(loop_scope="module")
async def test_a_tool_cannot_make_such_a_name(runner: SandboxRunner, workspace: Path) -> None:
    """Through the sandbox, as atk3 made them."""
    src = (
        "def run():\n"
        '    """Make names that do not show as they are."""\n'
        "    out = {}\n"
        f"    for n in {ATTACKER_NAMES[:-1]!r}:\n"
        "        try:\n"
        '            with open(n, "w") as f:\n'
        '                f.write("x")\n'
        '            out[n] = "created"\n'
        "        except PermissionError as e:\n"
        '            out[n] = "refused"\n'
        "    return out\n"
    )
    res = await runner.run(src, {}, workspace)
    assert res.ok, res
    assert set(res.result.values()) == {"refused"}, res.result
    assert os.listdir(workspace) == []

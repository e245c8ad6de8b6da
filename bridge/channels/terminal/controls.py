"""Text from outside roost, made safe to write to a terminal.

A model's answer, a tool name the model made up, an imported or stored message
can hold terminal control sequences: an OSC 52 clipboard write
(`ESC ] 52 ; c ; … ESC \\`), a window title, cursor movement that hides the
line above, the hidden-text attribute, or the same as a C1 control (U+009B is
a CSI on its own). `shown` replaces every C0 control but newline and tab
(ESC, BEL, CR, BS…), DEL and every C1 control (U+0080-U+009F) with U+FFFD, so
what arrives is seen, not obeyed. The bidirectional embeddings, overrides and
isolates (U+202A-U+202E, U+2066-U+2069) go the same way: in a terminal that
orders text both ways they reorder what follows them (Trojan Source,
CVE-2021-42574: `invoice\u202efdp.exe` reads as `invoiceexe.pdf`); the plain
direction marks (U+200E, U+200F, U+061C) stay, they reorder nothing past their
neighbours. A CR LF line ending stays a line ending. Pure; roost's own styling
(rich's, added after this) is untouched.
"""

from __future__ import annotations

import re

PLACEHOLDER = "\ufffd"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def shown(text: str) -> str:
    """`text` with every control character but `\\n` and `\\t`, and every bidirectional
    embedding, override and isolate, replaced by U+FFFD."""
    return _CONTROLS.sub(PLACEHOLDER, text.replace("\r\n", "\n"))

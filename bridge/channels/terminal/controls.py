"""Text from outside roost, made safe to write to a terminal.

A model's answer, a tool name the model made up, an imported or stored message
can hold terminal control sequences: an OSC 52 clipboard write
(`ESC ] 52 ; c ; … ESC \\`), a window title, cursor movement that hides the
line above, the hidden-text attribute, or the same as a C1 control (U+009B is
a CSI on its own). `shown` replaces every C0 control but newline and tab
(ESC, BEL, CR, BS…), DEL and every C1 control (U+0080-U+009F) with U+FFFD, so
what arrives is seen, not obeyed. A CR LF line ending stays a line ending.
Pure; roost's own styling (rich's, added after this) is untouched.
"""

from __future__ import annotations

import re

PLACEHOLDER = "\ufffd"
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(text: str) -> str:
    """`text` with every control character but `\\n` and `\\t` replaced by U+FFFD."""
    return _CONTROLS.sub(PLACEHOLDER, text.replace("\r\n", "\n"))

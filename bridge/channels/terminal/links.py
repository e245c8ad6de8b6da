"""Links in the terminal: the URL is always there to see, or to click where it can be.

rich renders a Markdown link `[text](url)` as `text` carrying an OSC 8
hyperlink, which a terminal without OSC 8 support shows as the bare text:
the URL is lost. So `roost chat` asks rich for OSC 8 only where the
terminal is known to support it (`hyperlinks`, from the environment, the
way the `supports-hyperlinks` packages decide: `FORCE_HYPERLINK`, VTE ≥
0.50, Windows Terminal, iTerm2, WezTerm, VS Code, kitty, ghostty, foot,
DomTerm; never inside tmux or screen, which may drop the sequence), and
everywhere else prints `text (url)`. An autolink (`<https://…>`), whose text
is its URL, is shown once, not as `url (url)` (`AnswerMarkdown`).
"""

from __future__ import annotations

from collections.abc import Mapping

from markdown_it.token import Token
from rich.markdown import Markdown

from bridge.channels.terminal.controls import shown

TERM_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "vscode", "ghostty", "Hyper"})
TERMS = ("xterm-kitty", "xterm-ghostty", "foot", "wezterm", "alacritty")
VTE_MIN = 5000  # VTE 0.50 (GNOME Terminal, Tilix, Terminator, ...)


def hyperlinks(env: Mapping[str, str]) -> bool:
    """Whether the terminal `env` describes shows OSC 8 links (and hides their URL)."""
    forced = env.get("FORCE_HYPERLINK")
    if forced is not None and forced.strip():
        return forced.strip() != "0"
    term = env.get("TERM", "")
    if term.startswith(("screen", "tmux")) or "TMUX" in env:
        return False
    if "DOMTERM" in env or "WT_SESSION" in env or "KITTY_WINDOW_ID" in env:
        return True
    if env.get("TERM_PROGRAM", "") in TERM_PROGRAMS:
        return True
    vte = env.get("VTE_VERSION", "")
    if vte.isdigit() and int(vte) >= VTE_MIN:
        return True
    return term.startswith(TERMS)


def _unlinked(children: list[Token]) -> list[Token]:
    """An inline token's children with autolinks reduced to their text."""
    return [
        t
        for t in children
        if not (t.type in ("link_open", "link_close") and t.markup == "autolink")
    ]


class AnswerMarkdown(Markdown):
    """An answer as Markdown; without OSC 8 every link shows its URL, autolinks once."""

    def __init__(self, text: str, osc8: bool) -> None:
        super().__init__(shown(text), hyperlinks=osc8)  # no escape sequence of the model's
        if not osc8:
            for token in self.parsed:
                if token.type == "inline" and token.children:
                    token.children = _unlinked(token.children)

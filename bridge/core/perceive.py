"""What a turn gets from the files that came with a message (the senses seam).

The core never imports `bridge.senses`; the app injects an object with the
`Senses` protocol into the `TurnRunner`. Before the agent runs, `prepare`
turns `Inbound.attachments` into a `Prepared`: text to put before the
person's message (a document's text, a transcript, "[image: 1 photo]" — the
same text goes to the model and into the stored history), images for the
model only (never stored: the history keeps the placeholder), notices for
the person (shown before the answer) or a refusal (the turn is answered
with it, no model is asked). After the answer, `handed_out` names the files
a tool wrote into the tenant's `outputs/` during the turn; they go out as
`Final.files`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bridge.types.backend import ImagePart
from bridge.types.messages import Inbound, OutFile
from bridge.types.tools import TurnContext


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the attachments of one message add to its turn."""

    text_prefix: str = ""  # before the person's text: to the model and into the history
    images: tuple[ImagePart, ...] = ()  # with the person's message, to the model only
    notices: tuple[str, ...] = ()  # lines for the person, before the answer
    refusal: str = ""  # non-empty: answer with this, ask no model
    outputs_seen: frozenset[tuple[str, int, int]] = frozenset()  # outputs/ before the turn
    # what vouches for `outputs_seen` (a directory generation; None: nothing)
    outputs_stamp: tuple[str, int, int] | None = None

    def asked(self, text: str) -> str:
        """The person's message as the model (and the history) gets it."""
        if not self.text_prefix:
            return text
        return f"{self.text_prefix}\n\n{text}" if text.strip() else self.text_prefix

    def lead(self) -> str:
        """The notices as the opening of the reply ('' when there are none)."""
        return "\n".join(self.notices) + "\n\n" if self.notices else ""


NOTHING = Prepared()


class Senses(Protocol):
    """Attachments in, files out (bridge.senses.pipeline.SensePipeline)."""

    async def prepare(self, turn: TurnContext) -> Prepared: ...

    def handed_out(self, turn: TurnContext, prepared: Prepared) -> tuple[OutFile, ...]: ...


def attachment_meta(inbound: Inbound) -> dict[str, object]:
    """Audit metadata of a message's attachments (kinds, bytes, duration); never a name.
    Empty for a message without attachments."""
    atts = inbound.attachments
    if not atts:
        return {}
    return {
        "attachments": len(atts),
        "attachment_kinds": ",".join(sorted({a.kind for a in atts})),
        "attachment_bytes": sum(a.size for a in atts),
        "attachment_ms": int(sum(a.duration_s for a in atts) * 1000),  # voice and audio
    }

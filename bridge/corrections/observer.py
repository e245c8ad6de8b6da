"""Offer to keep a standing instruction: a turn observer over the person's message.

Before each turn, `detect` reads the person's message. When it holds a
standing instruction ("from now on …", "nie wieder …"), an offer is made
for this chat (`Offers`) and the reply ends with one short line and two
one-tap actions: keep it as a feedback memory (`/yes <id>`) or as a steering
line (`/yes <id> steering`). The line quotes the whole instruction, exactly as
it would be kept (`detect` keeps at most `MAX_CHARS`, a few lines on a phone;
a Markdown code span, so no link or emphasis hides a character of it): the
person never confirms text they were not shown. Nothing is stored here: only the person's
confirmation stores it (`commands.CorrectionCommands`). Scheduled messages
(the scheduler speaking for the person) are never read. `correction.offered`
records the offer id, subject key, polarity and a hash, never the words.
"""

from __future__ import annotations

from bridge.core.agent import AgentResult
from bridge.core.sessions import Session
from bridge.corrections.detect import detect
from bridge.corrections.keep import text_hash
from bridge.corrections.offers import Offer, Offers, literal
from bridge.types.audit_sink import TurnEvents
from bridge.types.messages import Action
from bridge.types.tools import TurnContext


def offer_actions(offer: Offer) -> tuple[Action, Action]:
    return (
        Action("Keep as memory", f"/yes {offer.id}"),
        Action("Keep as steering", f"/yes {offer.id} steering"),
    )


def offer_line(offer: Offer) -> str:
    """The offer, quoting every character `/yes` would keep (never cut)."""
    said = literal(offer.correction.text)
    return f"📌 Keep {said} as a standing instruction? Nothing is kept until you confirm."


class CorrectionObserver:
    def __init__(self, offers: Offers) -> None:
        self._offers = offers

    async def before_turn(self, turn: TurnContext, session: Session, events: TurnEvents) -> None:
        inbound = turn.inbound
        if inbound.scheduled:
            return
        found = detect(inbound.text)
        if found is None:
            return
        key = (turn.tenant, inbound.channel, inbound.chat)
        offer = self._offers.add(key, found, inbound.msg_id)
        turn.notices.append(offer_line(offer))
        turn.actions.extend(offer_actions(offer))
        details: dict[str, object] = {
            "id": offer.id,
            "subject": found.subject or "none",
            "polarity": found.polarity,
            "lang": found.lang,
            "hash": text_hash(found.text),
            "channel": inbound.channel,
        }
        events.add("correction.offered", turn.tenant, details)

    async def after_turn(self, turn: TurnContext, result: AgentResult, events: TurnEvents) -> None:
        return None

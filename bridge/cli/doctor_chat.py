"""`roost doctor`'s fallback when a model server has no usable `GET /models`: one chat request.

The model list is optional (several OpenAI-compatible servers answer it with
404 or 405); what roost needs is the chat endpoint. `probe_chat` sends what a
turn sends, through the very backend a turn uses (`make_backend_of`, no
retries, the doctor's timeout as the inactivity limit), asks for one word,
and stops at the first thing the model streams back. Its answer is the
backend's own safe line (no address, no server text), so nothing secret can
reach the doctor's output.
"""

from __future__ import annotations

import logging
import re

from bridge.app.models import make_backend_of
from bridge.core.config_sections import LLMSettings
from bridge.types.backend import BackendError, ChatMessage, ModelRequest, Retrying

PING = ModelRequest(system="", messages=(ChatMessage("user", "Reply with the word OK."),))


_ENV_OF_LLM = re.compile(r"\bROOST_LLM__([A-Z_]+)\b")


def for_the_operator(said: str) -> str:
    """A backend's line for the person, reworded for the doctor's reader, the operator: no
    "The operator's log has details", "check X" for "the operator should check X", and an
    [llm] setting named as the file's key too (`llm.model (ROOST_LLM__MODEL)`): a newcomer
    who wrote `model` into roost.toml went looking for an environment variable."""
    said = said.split(" The operator")[0].replace("the operator should check ", "check ")
    return _ENV_OF_LLM.sub(lambda m: f"llm.{m[1].lower()} ({m[0]})", said)


async def probe_chat(llm: LLMSettings, timeout_s: float, table: str | None = None) -> str | None:
    """None when the model started answering; else why not, one safe line (naming the
    settings of `table`, its [models.NAME], or [llm]'s)."""
    quiet = llm.model_copy(update={"max_retries": 0, "timeout_s": timeout_s})
    backend, _ = make_backend_of(quiet, table)
    # the backend logs a failure's full story under a reference; the doctor's one
    # line is the report here, so keep its log out of the table
    faults = logging.getLogger("bridge.llm.faults")
    level = faults.level
    faults.setLevel(logging.CRITICAL)
    events = backend.stream(PING)
    try:
        async for event in events:
            if not isinstance(event, Retrying):
                return None
        return "the model sent an empty answer"
    except BackendError as exc:
        return f"{exc.kind}: {for_the_operator(exc.user_message)}"
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()  # closes the HTTP stream: the model stops generating
        faults.setLevel(level)
        await backend.aclose()

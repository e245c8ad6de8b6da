"""Model-call failures told twice: a safe line for the person, the full story for the log.

`ServerFault` carries `user_message` (shown in the chat: no host, port, URL,
path or server-supplied text) and `detail` (for the operator). `reported`
logs the detail under a short random reference and returns the error the
person sees, which repeats the reference so the operator can find the line.
No I/O besides the log; no protocol knowledge.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from bridge.types.backend import BackendError

log = logging.getLogger(__name__)


class ServerFault(BackendError):
    """A failed model call: `user_message` is safe to show, `detail` is for the log."""

    def __init__(self, kind: str, user_message: str, detail: str = "") -> None:
        super().__init__(kind, user_message)
        self.detail = detail


def setting(table: str | None, key: str) -> str:
    """How the operator names a model's setting: `ROOST_LLM__API_KEY` for [llm] (README puts
    the key in that variable), `[models.smart] api_key` for a named model's table."""
    return f"ROOST_LLM__{key.upper()}" if table is None else f"[models.{table}] {key}"


def which(model: str, table: str | None) -> str:
    """The configured model, for the operator's log line (several may share one server)."""
    return f"model {model!r} of " + ("[llm]" if table is None else f"[models.{table}]")


def reported(
    exc: BackendError, server: str, redact: Callable[[str], str], model: str = ""
) -> BackendError:
    """Log `exc` in full under a fresh reference; return what the person may see.

    Any mention of `server` (host[:port]) left in the safe text is replaced. `model`:
    which configured model it was (`which`), for the log.
    """
    ref = secrets.token_hex(3)
    detail = getattr(exc, "detail", "") or exc.user_message
    at = f"{server} ({model})" if model else server
    log.warning("model call failed (ref %s) at %s: %s: %s", ref, at, exc.kind, redact(detail))
    public = exc.user_message.replace(server, "the model server") if server else exc.user_message
    return BackendError(
        exc.kind, f"{public[:1].upper()}{public[1:]}. The operator's log has details (ref {ref})."
    )

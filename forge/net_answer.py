"""What a tool sees of a response, built in one place so that every field of
it passes the masker (issue 21, item 6): the status (a number), each header's
NAME and value, the body text, the final URL, and a refusal's text. Vault values
the call holds are replaced by `[vault:name]` in their plain and URL-encoded
spellings, regardless of case (header and host names are case-blind and
arrive lower-cased; a server may re-case what it echoes). The agent loop
masks again, in every spelling it knows, before anything reaches the model;
what neither can see (a value the server or the tool transforms otherwise) is
the limit docs/security.md states.
"""

from __future__ import annotations

from collections.abc import Mapping

from forge.net_rules import mask
from forge.protocol.net import NetAnswer


class RawResponse:
    """A response as the broker read it (never handed to a tool as is)."""

    __slots__ = ("body", "charset", "headers", "status", "url")

    def __init__(
        self, status: int, headers: list[tuple[str, str]], body: bytes, charset: str, url: str
    ) -> None:
        self.status, self.headers, self.body, self.charset, self.url = (
            status,
            headers,
            body,
            charset,
            url,
        )

    def headers_get(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)

    def text(self) -> str:
        try:
            return self.body.decode(self.charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def tool_answer(raw: RawResponse, secrets: Mapping[str, str]) -> NetAnswer:
    """The answer a tool receives: every text field masked."""
    headers = tuple((_mask(name, secrets), _mask(value, secrets)) for name, value in raw.headers)
    return NetAnswer(True, raw.status, headers, _mask(raw.text(), secrets), _mask(raw.url, secrets))


def _mask(text: str, secrets: Mapping[str, str]) -> str:
    return mask(text, secrets, fold_case=True)


def refused_answer(error: str, secrets: Mapping[str, str]) -> NetAnswer:
    """A refusal: its fixed text, masked too (it may name a host)."""
    return NetAnswer(False, error=_mask(error, secrets))

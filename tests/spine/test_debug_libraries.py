"""At `log_level = "DEBUG"` the HTTP library's connection steps stay out of the log.

httpcore logs a line per connection step of every Telegram long poll: at DEBUG they
were 88 of 96 lines in 30 idle seconds, burying roost's own. They now stay at INFO
unless the operator names them in `ROOST_LOG_DEBUG` (comma-separated logger names).
"""

from __future__ import annotations

import logging

from bridge.app.logging_setup import setup_logging
from tests.spine.test_json_logs import Stderr, stderr

__all__ = ["stderr"]  # the fixture, used by name


def emit() -> None:
    logging.getLogger("httpcore.connection").debug("connect_tcp.started host='api'")
    logging.getLogger("httpcore.http11").debug("receive_response_headers.complete")
    logging.getLogger("httpcore.connection").info("an INFO line of httpcore")
    logging.getLogger("bridge.channels.telegram.channel").debug("roost's own DEBUG line")


def test_debug_keeps_httpcore_at_info(stderr: Stderr) -> None:
    setup_logging("DEBUG", [], "text", environ={})
    emit()
    text = stderr.getvalue()
    assert "roost's own DEBUG line" in text and "an INFO line of httpcore" in text
    assert "connect_tcp" not in text and "receive_response_headers" not in text


def test_roost_log_debug_asks_for_them(stderr: Stderr) -> None:
    setup_logging("DEBUG", [], "text", environ={"ROOST_LOG_DEBUG": "httpcore, httpx"})
    emit()
    logging.getLogger("httpx").debug("an httpx DEBUG line")
    text = stderr.getvalue()
    assert "connect_tcp" in text and "receive_response_headers" in text
    assert "an httpx DEBUG line" in text
    setup_logging("DEBUG", [], "text", environ={})  # asked no more: back to INFO
    emit()
    assert text.count("connect_tcp") == stderr.getvalue().count("connect_tcp")

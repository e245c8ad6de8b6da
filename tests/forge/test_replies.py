"""How the helper answers a call, without a fork: forge.replies turns what it saw of
one child (kill reason, exit status, result frame) into the reply the runner gets."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from forge.helper_pool import workspace_key
from forge.protocol.calls import Reply, decode_reply, encode_reply
from forge.protocol.frames import unframe
from forge.protocol.jobs import failure_doc, success_doc
from forge.replies import InFlight, outcome, traced


def _call(*, killed: str = "", trace: list[tuple[str, int]] | None = None) -> InFlight:
    started = time.monotonic()
    return InFlight(
        req_id=41,
        pid=12345,
        pidfd=-1,
        fd=-1,
        deadline=started + 2.5,
        started=started,
        max_output=4096,
        killed=killed,
        trace=trace,
    )


def _doc(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _exit(code: int) -> int:
    return code << 8  # a wait status: exited with `code`


def _on_the_wire(reply: Reply) -> Reply:
    """What the runner decodes: every reply must survive the wire."""
    doc = unframe(encode_reply(reply))
    assert doc is not None
    return decode_reply(doc)


def _error(reply: Reply) -> tuple[str, str]:
    reply = _on_the_wire(reply)
    assert reply.id == 41 and not reply.ok and reply.result is None and reply.error is not None
    return reply.error.kind, reply.error.message


def test_a_finished_call_returns_its_result_and_printed_text() -> None:
    reply = _on_the_wire(outcome(_call(), 0, _doc(success_doc({"total": 3.5}, "hi\n"))))
    assert reply.ok and reply.id == 41
    assert reply.result == {"total": 3.5} and reply.printed == "hi\n" and reply.error is None
    assert reply.duration_ms >= 0


def test_a_failure_the_child_reports_keeps_its_kind_and_message() -> None:
    doc = _doc(failure_doc("denied", "open('/etc/passwd') is outside the workspace"))
    assert _error(outcome(_call(), 0, doc)) == (
        "denied",
        "open('/etc/passwd') is outside the workspace",
    )


@pytest.mark.parametrize("reason", ["timeout", "output"])
def test_a_killed_call_never_passes_on_a_result(reason: str) -> None:
    """Killed for time or output: a complete success frame is ignored."""
    kind, message = _error(outcome(_call(killed=reason), 0, _doc(success_doc("leak", "x"))))
    assert kind == reason
    assert ("2.5 s" if reason == "timeout" else "4096 bytes") in message


@pytest.mark.parametrize("sig", [signal.SIGXCPU, signal.SIGKILL])
def test_death_by_cpu_limit_or_sigkill_is_a_timeout(sig: signal.Signals) -> None:
    assert _error(outcome(_call(), int(sig), None)) == (
        "timeout",
        "the tool used up its CPU time and was killed",
    )


def test_a_crash_names_its_signal() -> None:
    status = int(signal.SIGSEGV)
    assert os.WIFSIGNALED(status)
    assert _error(outcome(_call(), status, None)) == ("runtime", "the tool crashed (SIGSEGV)")


def test_exit_status_3_without_a_result_is_out_of_memory() -> None:
    kind, message = _error(outcome(_call(), _exit(3), None))
    assert kind == "memory" and "status 3" in message


@pytest.mark.parametrize(
    "doc",
    [
        None,
        b"",
        b"not json",
        b"[1, 2]",
        _doc({"ok": False, "kind": "root", "message": "made up kind"}),
        _doc({"ok": "yes", "result": 1, "printed": ""}),
        _doc({"ok": True, "result": 1, "printed": 7}),
        b"[" * 100_000,
    ],
)
def test_a_missing_or_hostile_result_frame_is_refused(doc: bytes | None) -> None:
    kind, message = _error(outcome(_call(), _exit(1), doc))
    assert kind == "runtime"
    assert message == "the tool exited without a valid result (status 1)"


def test_a_traced_reply_carries_helper_and_child_marks_in_order() -> None:
    call = _call(trace=[("helper_recv", 1), ("helper_sent", 2)])
    doc = _doc({**success_doc(1, ""), "trace": [["child_ran", 3]]})
    reply = _on_the_wire(traced(call, outcome(call, 0, doc)))
    names = [name for name, _ in reply.trace]
    assert names == ["helper_recv", "helper_sent", "child_ran", "helper_reply"]


def test_an_untraced_reply_has_no_marks_even_if_the_child_sends_some() -> None:
    call = _call()
    doc = _doc({**success_doc(1, ""), "trace": [["child_ran", 3]]})
    assert _on_the_wire(traced(call, outcome(call, 0, doc))).trace == ()


def test_the_helper_of_a_call_is_chosen_by_its_workspace_as_spelled() -> None:
    assert workspace_key("/home/t/alice/ws/") == workspace_key("/home/t/alice/./ws")
    assert workspace_key("/home/t/alice/ws/../ws") == "/home/t/alice/ws"
    assert workspace_key("/home/t/alice/ws") != workspace_key("/home/t/bob/ws")

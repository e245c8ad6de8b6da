"""A child answers the runner directly (forge.protocol.answers): one hop fewer, the
same results; only the token of a call in flight completes it; what does not fit
in one message still arrives, through the helper."""

from __future__ import annotations

import asyncio
import errno
import json
import marshal
from pathlib import Path

import pytest

from forge.helper_process import DROPS_TO_RETIRE, READS_PER_WAKE, HelperProcess, answer_socket
from forge.layers import Layers
from forge.protocol.answers import (
    DIRECT_MAX,
    HEADER,
    MESSAGE_MAX,
    TOKEN_SIZE,
    decode_direct,
    encode_direct,
)
from forge.protocol.calls import Reply, Request, decode_request, encode_request
from forge.protocol.fields import dump
from forge.protocol.frames import ProtocolError, unframe
from forge.protocol.jobs import decode_job, encode_job, failure_doc, success_doc
from forge.protocol.limits import Limits
from forge.runner import SandboxRunner
from tests.forge.helpers import descriptors, tool
from tests.waits import HANG_S, until

aio = pytest.mark.asyncio(loop_scope="module")
TOKEN = bytes(range(TOKEN_SIZE))
REQ = Request(3, "src", {}, "/tmp", (), 1.0, 100, Limits(), trace=True, token=TOKEN)


def test_messages_round_trip_and_are_bounded() -> None:
    doc = dump(success_doc({"a": 1}, "printed"))
    assert decode_direct(encode_direct(9, TOKEN, doc)) == (9, TOKEN, doc)
    with pytest.raises(ProtocolError):
        decode_direct(b"\0" * (HEADER.size - 1))
    with pytest.raises(ProtocolError):
        decode_direct(b"\0" * (MESSAGE_MAX + 1))


def test_the_token_travels_with_the_request_and_the_job() -> None:
    framed = unframe(encode_request(REQ))
    assert framed is not None and decode_request(framed).token == TOKEN
    code = marshal.dumps(compile("x = 1", "<tool>", "exec"))
    job = decode_job(encode_job(code, REQ, "/tmp", (("helper_recv", 5),)))
    assert (job.token, job.call_id, job.marks) == (TOKEN, 3, (("helper_recv", 5),))
    for bad in ("zz", "ab" * (TOKEN_SIZE - 1), 7):
        doc = {**json.loads(framed), "token": bad}
        with pytest.raises(ProtocolError):
            decode_request(dump(doc))


@aio
async def test_only_the_token_of_a_call_in_flight_completes_it() -> None:
    """What a child that broke out of every layer could write on the shared socket:
    a wrong token, an unknown call, a short message. None completes a call or
    stops the socket; the real answer does."""
    mine, theirs = answer_socket()
    helper = HelperProcess(1 << 20, None, mine)
    try:
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        helper.expect(7, fut, TOKEN)
        doc = dump(success_doc(49, ""))
        for forged in (
            encode_direct(7, bytes(TOKEN_SIZE), doc),  # another token
            encode_direct(8, TOKEN, doc),  # another call
            b"short",
            b"",
        ):
            theirs.send(forged)
            helper._answers_readable()
            assert not fut.done()
        theirs.send(encode_direct(7, TOKEN, doc))
        helper._answers_readable()
        assert fut.done() and fut.result().ok and fut.result().result == 49
        # the same answer again finds no call waiting
        theirs.send(encode_direct(7, TOKEN, dump(failure_doc("runtime", "late"))))
        helper._answers_readable()
        assert fut.result().ok and helper.answers is not None
        assert helper.dropped == 4 + 1
    finally:
        theirs.close()
        helper._answers_readable()  # the other end is gone: the socket is closed
        assert helper.answers is None


@aio
async def test_a_broken_answer_is_a_failed_call() -> None:
    mine, theirs = answer_socket()
    helper = HelperProcess(1 << 20, None, mine)
    try:
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        helper.expect(1, fut, TOKEN)
        theirs.send(encode_direct(1, TOKEN, b'{"ok": "yes"}'))
        helper._answers_readable()
        reply = fut.result()
        assert not reply.ok and reply.error is not None and reply.error.kind == "runtime"
    finally:
        theirs.close()
        helper._answers_readable()


@aio
async def test_answers_come_from_the_child_and_large_ones_through_the_helper(
    workspace: Path,
) -> None:
    r = SandboxRunner(trace=True, default_timeout_s=HANG_S)
    await r.start()
    try:
        small = await r.run(tool("return n * n", params="n: int"), {"n": 7}, workspace)
        large = await r.run(tool("return 'x' * n", params="n: int"), {"n": DIRECT_MAX}, workspace)
        assert small.ok and small.result == 49 and small.duration_ms > 0
        assert large.ok and large.result == "x" * DIRECT_MAX
        direct, relayed = r.stages()
        # the helper saw the call (its marks travel in the job) but relayed no answer
        assert "helper_recv" in direct and "ran" in direct
        assert "helper_result" not in direct and "helper_reply" not in direct
        assert "helper_result" in relayed and "helper_reply" in relayed
    finally:
        await r.aclose()


@aio
async def test_the_same_results_with_and_without_direct_answers(workspace: Path) -> None:
    (workspace / "in.txt").write_text("hello")
    calls: list[tuple[str, dict[str, object]]] = [
        (tool("return open('in.txt').read().upper()"), {}),
        (tool("print('said')\nreturn [1, 2.5, None, {'k': 'v'}]"), {}),
        (tool("return 1 / 0"), {}),
        (tool("return open('/etc/passwd').read()"), {}),
        (tool("return 'y' * 5000"), {}),  # over max_output below
        (tool("while True:\n    pass"), {}),
    ]
    seen = []
    for direct in (True, False):
        r = SandboxRunner(direct_answers=direct, default_timeout_s=1.0, max_output=4096)
        await r.start()
        try:
            results = [await r.run(src, params, workspace) for src, params in calls]
        finally:
            await r.aclose()
        seen.append([(x.ok, x.result, x.printed, x.error_kind) for x in results])
    assert seen[0] == seen[1]
    kinds = [kind for _, _, _, kind in seen[0]]
    assert kinds == [None, None, "runtime", "denied", "output", "timeout"]
    assert seen[0][1][2] == "said\n"


@aio
async def test_a_helper_without_an_answer_socket_holds_none(workspace: Path) -> None:
    """The helper closes its copy of the answer socket once the zygote holds it:
    only the zygote and its children can write there."""
    r = SandboxRunner(default_timeout_s=HANG_S)
    await r.start()
    try:
        assert (await r.run(tool("return 1"), {}, workspace)).ok
        helper, zygote = r.helper_pid(workspace), r.zygote_pid(workspace)
        assert helper is not None and zygote is not None

        def sockets(pid: int) -> set[str]:
            return {name for name in descriptors(pid).values() if name.startswith("socket:")}

        # the zygote: its socket to the helper, the answer socket; the helper: its socket
        # to the zygote and its lending socket (forge.protocol.lending), never the
        # answer socket (nor does the zygote hold the lending socket)
        assert len(sockets(zygote)) == 2 and len(sockets(helper)) == 2
        assert not sockets(zygote) & sockets(helper)
    finally:
        await r.aclose()


FORGER = '''
import os
import socket
import time

def run() -> dict:
    """Write forged answers on every socket this process holds; try to shut it."""
    while not os.path.exists("sibling.started"):  # a real call is in flight first
        time.sleep(0.01)
    done = {"forged": 0, "shut": [], "options": []}
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
        except FileNotFoundError:  # the directory's own descriptor, closed by now
            continue
        fd = int(name)
        for call in range(1, 40):  # fewer than DROPS_TO_RETIRE (which retire the helper)
            head = call.to_bytes(8, "little") + bytes(16)
            os.write(fd, head + b'{"ok": true, "result": "forged", "printed": ""}')
            done["forged"] += 1
        sock = socket.socket(fileno=fd)
        for what, attempt in (
            ("shut", lambda: sock.shutdown(socket.SHUT_RDWR)),
            ("options", lambda: sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)),
        ):
            try:
                attempt()
                done[what].append("done")
            except OSError as exc:
                done[what].append(exc.errno)
        sock.detach()
    with open("forger.done", "w") as fh:  # the sibling call waits for this
        fh.write("done")
    return done
'''
# a sibling call in flight for the whole forgery: it starts first (the forger waits for
# its file in the shared workspace) and ends after (it waits for the forger's file)
SIBLING = """
import os, time

def run() -> str:
    open("sibling.started", "w").close()
    while not os.path.exists("forger.done"):
        time.sleep(0.01)
    return "mine"
"""


@aio
async def test_a_child_that_broke_out_cannot_answer_for_others_or_shut_the_socket(
    workspace: Path,
) -> None:
    """Only seccomp and the rlimits on: the child finds the answer socket it shares
    with its siblings, writes an answer for the first 39 call ids without a token, and
    tries to shut the socket and shrink its buffer. Nothing forged is taken, seccomp
    refuses both, and the next calls are answered directly as before."""
    layers = Layers(lint=False, restricted=False, gate=False, landlock=False)
    r = SandboxRunner(trace=True, default_timeout_s=HANG_S, layers_for_tests=layers)
    await r.start()
    try:
        slow = asyncio.ensure_future(r.run(SIBLING, {}, workspace))
        res = await r.run(FORGER, {}, workspace)
        assert res.ok, res
        assert res.result["forged"] >= 39
        assert res.result["shut"] == [errno.EPERM] and res.result["options"] == [errno.EPERM]
        assert (await slow).result == "mine"
        after = await r.run(tool("return 'after'"), {}, workspace)
        assert after.result == "after"
        assert "helper_result" not in r.stages()[-1]  # still straight from the child
    finally:
        await r.aclose()


@aio
async def test_the_socket_is_read_a_bounded_number_at_a_time() -> None:
    """A wake-up of the loop reads at most `READS_PER_WAKE` messages: a flood cannot
    hold the event loop (session 30's attacker pass held it 1.37 s); the rest are
    read on the next wake-ups, none is lost."""
    mine, theirs = answer_socket()
    helper = HelperProcess(1 << 20, None, mine)
    loop = asyncio.get_running_loop()
    try:
        futs = []
        for call in range(READS_PER_WAKE + 36):
            fut: asyncio.Future[Reply] = loop.create_future()
            helper.expect(call, fut, TOKEN)
            futs.append(fut)
            theirs.send(encode_direct(call, TOKEN, dump(success_doc(call, ""))))
        helper._answers_readable()
        assert sum(f.done() for f in futs) == READS_PER_WAKE
        helper._answers_readable()
        assert [f.result().result for f in futs] == list(range(READS_PER_WAKE + 36))
    finally:
        theirs.close()
        helper._answers_readable()


@aio
async def test_a_run_of_messages_that_answer_nothing_retires_the_helper() -> None:
    """Late answers of calls given up on come one at a time between real ones and are
    only counted; `DROPS_TO_RETIRE` in a row is a child that broke out: retired."""
    mine, theirs = answer_socket()
    helper = HelperProcess(1 << 20, None, mine)
    loop = asyncio.get_running_loop()
    try:
        doc = dump(success_doc(1, ""))
        for call in range(3 * DROPS_TO_RETIRE):  # a late one, then a real one, ...
            fut: asyncio.Future[Reply] = loop.create_future()
            helper.expect(call, fut, TOKEN)
            theirs.send(encode_direct(10_000 + call, TOKEN, doc))
            theirs.send(encode_direct(call, TOKEN, doc))
            helper._answers_readable()
            assert fut.done()
        assert helper.dropped == 3 * DROPS_TO_RETIRE and not helper.dead
        for _ in range(DROPS_TO_RETIRE):
            theirs.send(encode_direct(7, bytes(TOKEN_SIZE), doc))
        helper._answers_readable()
        assert helper.dead and helper.answers is None  # calls go to a new helper
    finally:
        theirs.close()


@aio
async def test_a_child_flooding_the_socket_gets_its_helper_retired(workspace: Path) -> None:
    """A child with only the process layers (as if it broke out of RestrictedPython)
    writes to the answer socket it inherited as fast as it can: its helper is retired
    and the next call runs on a new one (or, when the flood ended early, as on loaded
    CI machines, the call's own answer comes through and the next call still works)."""
    r = SandboxRunner(
        layers_for_tests=Layers(restricted=False, lint=False), default_timeout_s=HANG_S
    )
    await r.start()
    try:
        assert (await r.run(tool("return 1"), {}, workspace)).ok
        first = r.helper_pid(workspace)
        # the helper that will run the flood, taken now: once it is retired, the pool
        # may already hold the workspace's next helper (a CI run waited on that one)
        flooding = r._pool.known(workspace)
        assert flooding is not None
        flood = """
import os, stat
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            for _ in range(20000):
                os.write(fd, b'x' * 24)
    except OSError:
        pass
return 'flooded'
"""
        res = await r.run(tool(flood), {}, workspace)
        if res.ok:
            # seen on loaded CI machines only: the flood ended before 64 junk messages
            # in a row reached the runner, and the call's own answer came through (never
            # the junk: it carries no call's token). Nothing to wait for then.
            assert res.result == "flooded", res
        else:
            # the helper is retired before the call's answer is read
            assert "helper died" in res.error_message, res
            await until(lambda: flooding.dead, "the flooding helper retired")
        after = await r.run(tool("return 2"), {}, workspace)
        assert after.ok and after.result == 2
        if not res.ok:
            assert r.helper_pid(workspace) != first
    finally:
        await r.aclose()

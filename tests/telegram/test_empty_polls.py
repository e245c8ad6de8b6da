"""A Bot API that answers `getUpdates` at once with nothing is not asked again at
once (issue 26: an idle daemon used 25–49 % of a core against such a server):
`PollWatch` spaces empty quick answers out, doubling to a cap, and asks at full
speed again from the first update on."""

from __future__ import annotations

from bridge.channels.telegram.connect import EmptyPolls, PollWatch
from tests.telegram.conftest import ALICE, TOKEN
from tests.telegram.fake_bot_api import FakeBotAPI


def test_only_quick_empty_answers_wait_and_the_wait_doubles_to_its_cap() -> None:
    polls = EmptyPolls(first_s=0.05, cap_s=1.0, quick_s=0.5)
    waits = [polls.after(empty=True, took_s=0.001) for _ in range(7)]
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert polls.after(empty=False, took_s=0.001) == 0.0  # an update: full speed again
    assert polls.after(empty=True, took_s=0.001) == 0.05
    assert polls.after(empty=True, took_s=25.0) == 0.0  # a real long poll: no wait
    assert polls.after(empty=True, took_s=0.001) == 0.05


async def test_an_instant_empty_server_is_asked_less_often() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with FakeBotAPI(TOKEN, max_poll_s=0.0) as fake:  # never holds a poll
        watch = PollWatch(lambda code: None, sleep=sleep)
        await watch.initialize()
        url = f"{fake.base_url}{TOKEN}/getUpdates"
        try:
            for _ in range(4):
                await watch.post(url)
            assert waits == [0.05, 0.1, 0.2, 0.4]
            fake.push_text(ALICE, "hello")
            updates = await watch.post(url)
            assert updates and waits == [0.05, 0.1, 0.2, 0.4]  # an update: no wait
        finally:
            await watch.shutdown()

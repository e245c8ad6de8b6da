"""When the page cannot listen, `roost serve` names the setting to change (s47, as a newcomer).

(The port-in-use case is asserted in test_daemon's test_a_port_in_use_is_a_clear_error.)

A port in use said "set ROOST_WEB__PORT" to someone whose roost.toml has `[web] port`;
a `[web] host` this machine does not have (an address copied from another machine)
said "Address not available" and then the same advice about the port. Each now names
its setting by file key and variable. A real `roost serve` against the fake model.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]  # the fixture, imported for the tests below


async def test_an_address_not_on_this_machine_names_the_host_setting(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake) | {"ROOST_WEB__HOST": "192.0.2.1"}  # TEST-NET-1: nobody's
    code, _, err = await run(["serve"], env)
    assert code == 1
    assert "cannot listen on 192.0.2.1:0" in err, err
    assert "This machine has no such address: set [web] host (ROOST_WEB__HOST)" in err
    assert "[web] port" not in err

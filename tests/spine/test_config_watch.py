"""The daemon's config watch (`bridge.app.reload.watch_config`) asks for a reload when the
file changes, and stops when cancelled (setting the daemon's stop event, as watchfiles'
`awatch` did), without loading anyio's asyncio backend: `changes` asks watchfiles' watcher
in a thread of its own. Asserted in a fresh process, on `sys.modules` (never on time)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c
from tests.waits import HANG_S

PROBE = """
import asyncio, json, sys
from pathlib import Path
from bridge.app.reload import watch_config

class Reloader:
    def __init__(self):
        self.asked = asyncio.Event()
    def request(self):
        self.asked.set()

async def main(folder, hang):
    path = Path(folder) / "roost.toml"
    reloader, stop = Reloader(), asyncio.Event()
    task = asyncio.create_task(watch_config(path, reloader, stop))
    await asyncio.sleep(0)  # its first step puts the watch in place, as serve relies on
    path.write_text("log_level = 'INFO'\\n")
    await asyncio.wait_for(reloader.asked.wait(), hang)
    task.cancel()
    try:
        await asyncio.wait_for(task, hang)
    except asyncio.CancelledError:
        pass
    backend = "anyio._backends._asyncio" in sys.modules
    print(json.dumps([reloader.asked.is_set(), stop.is_set(), backend]))

asyncio.run(main(sys.argv[1], float(sys.argv[2])))
"""


def test_a_change_asks_for_a_reload_without_anyio(tmp_path: Path) -> None:
    asked, stopped, backend = json.loads(python_c(PROBE, str(tmp_path), str(HANG_S)).stdout)
    assert asked and stopped
    assert backend is False

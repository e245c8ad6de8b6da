"""The cyclic garbage collector while a `roost` process starts: off, then its start-up frozen.

Starting, a `roost` process makes some 57,000 tracked objects (modules,
classes, functions, pydantic schemas, the roost's parts) that live as long
as the process. The collector traversed them again and again while they
were made, about 140 times before `roost send /help` answered: 35 ms of its
270 ms of CPU, a full collection among them (bench/startup.py), and found
about 1,400 objects of garbage (argparse's parsers, the classes
`dataclass(slots=True)` replaces).

`pause()` (run by `bridge.cli.main.main` when it runs the process's own
command line, first) turns the collector off. `resume()`, once the command
has started (the ready line of `serve`, the roost of `send` and `chat`
built, before any other command's own work; and in any case when `main`
returns), moves every object then alive into the permanent generation
(`gc.freeze()`: never traversed again, so a daemon's later collections are
cheaper too) and turns the collector back on. The start-up's own garbage is
frozen with the rest (a bounded, one-time amount: no file, socket or
connection is among it); everything made after is collected as before, the
young generation every 5,000 allocations instead of 700: a turn makes a few
thousand short-lived containers, and a young collection that finds them alive
promotes them for the older ones to traverse again (the collector's cost per
turn, 100 turns at once in process: 0.043 ms at 700, 0.019 at 5,000). A
process that embeds `main(argv)` (tests) keeps its collector as it is.
"""

from __future__ import annotations

import gc


def pause() -> None:
    """The collector off until `resume()`."""
    gc.disable()


YOUNG_THRESHOLD = 5_000  # container allocations between young collections (Python's: 700)


def resume() -> None:
    """Freeze what start-up made and turn the collector back on, collecting the young
    generation every `YOUNG_THRESHOLD` allocations; nothing when it is on (not paused,
    or resumed already)."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    gc.enable()

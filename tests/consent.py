"""Keep a draft the way a person does: `/tool save NAME`, then press the one button."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bridge.types.messages import Final

Send = Callable[[str], Awaitable[Final]]


async def keep(send: Send, name: str) -> Final:
    """Ask to save `name`, check that a consent prompt came back, press its button."""
    offer = await send(f"/tool save {name}")
    assert offer.actions, f"no consent button in: {offer.text}"
    (button,) = offer.actions
    assert button.command.startswith(f"/tool save {name.split()[0]}"), button.command
    return await send(button.command)

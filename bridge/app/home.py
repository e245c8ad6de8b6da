"""Helpers shared by the `roost` subcommands: argument types and an in-process roost."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from bridge.core.config import Settings
from bridge.types.tenant_dirs import check_tenant_id


def tenant_arg(value: str) -> str:
    """argparse type for a tenant id."""
    try:
        return check_tenant_id(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def with_roost(
    settings: Settings, tenant: str | None, body: Callable[[Any], Awaitable[int]]
) -> int:
    """Build a roost in this process (tenant as the local one), run `body`, close."""
    from bridge.app.build import build

    if tenant is not None and tenant != settings.local_tenant:
        settings = settings.model_copy(update={"local_tenant": tenant})
    roost = await build(settings)
    try:
        return await body(roost)
    finally:
        await roost.aclose()

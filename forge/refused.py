"""What no tool may hold, whoever hands it over: the objects and classes that reach
code, frames, modules or any class (forge.policy.verdict judges attribute results
by them; forge.checked_types judges the values its dataclass helpers read for a
tool). Imports nothing of forge, so both may use it."""

from __future__ import annotations

import string
import types

REFUSED_INSTANCES: tuple[type, ...] = (
    types.FrameType,
    types.TracebackType,
    types.CodeType,
    types.CellType,
    types.ModuleType,
    string.Formatter,
)
# Classes whose instances a tool must never build (or that hand out any class).
REFUSED_CLASSES = frozenset(
    {
        type,
        object,
        super,
        types.FunctionType,
        types.MethodType,
        types.CodeType,
        types.FrameType,
        types.TracebackType,
        types.CellType,
        types.ModuleType,
        types.BuiltinFunctionType,
    }
)

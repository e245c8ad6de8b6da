"""The rlimits of one child call, encoded in one shape on both wires."""

from __future__ import annotations

from dataclasses import dataclass, replace

from forge.protocol.frames import ProtocolError


@dataclass(frozen=True, slots=True)
class Limits:
    """The rlimits of one child call."""

    cpu_s: int = 5
    address_space: int = 768 * 1024 * 1024
    open_files: int = 64
    file_size: int = 16 * 1024 * 1024

    def for_timeout(self, timeout_s: float) -> Limits:
        """These limits with the CPU time the call's wall-clock timeout allows."""
        return replace(self, cpu_s=int(timeout_s) + 1)


def encode_limits(limits: Limits) -> list[int]:
    return [limits.cpu_s, limits.address_space, limits.open_files, limits.file_size]


def decode_limits(value: object) -> Limits:
    if not (
        isinstance(value, list | tuple)
        and len(value) == 4
        and all(type(v) is int and v >= 0 for v in value)
    ):
        raise ProtocolError(f"limits must be four non-negative integers, not {value!r}")
    return Limits(*value)

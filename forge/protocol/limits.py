"""The rlimits and the write budget of one child call, encoded in one shape on
both wires."""

from __future__ import annotations

from dataclasses import dataclass, replace

from forge.protocol.frames import ProtocolError


@dataclass(frozen=True, slots=True)
class Limits:
    """The rlimits of one child call, and the bytes it may write (forge.write_budget)."""

    cpu_s: int = 5
    address_space: int = 768 * 1024 * 1024
    open_files: int = 64
    file_size: int = 16 * 1024 * 1024  # RLIMIT_FSIZE: the largest a file may grow
    write_bytes: int = 64 * 1024 * 1024  # what one call may add to its workspace

    def with_write_budget(self, budget: int | None) -> Limits:
        """These limits with the write budget lowered to `budget` (never raised)."""
        if budget is None:
            return self
        return replace(self, write_bytes=max(0, min(self.write_bytes, budget)))

    def for_timeout(self, timeout_s: float) -> Limits:
        """These limits with the CPU time the call's wall-clock timeout allows."""
        return replace(self, cpu_s=int(timeout_s) + 1)


def encode_limits(limits: Limits) -> list[int]:
    return [
        limits.cpu_s,
        limits.address_space,
        limits.open_files,
        limits.file_size,
        limits.write_bytes,
    ]


def decode_limits(value: object) -> Limits:
    if not (
        isinstance(value, list | tuple)
        and len(value) == 5
        and all(type(v) is int and v >= 0 for v in value)
    ):
        raise ProtocolError(f"limits must be five non-negative integers, not {value!r}")
    return Limits(*value)

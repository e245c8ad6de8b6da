"""A separate process that appends to a chain and prints what was acknowledged.

Usage: python writer_proc.py CHAIN TAG COUNT CONCURRENCY
Prints "<seq> <tag>-<n>" once `append` has returned (the record is fsynced).
COUNT 0 means: run until killed.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

from bridge.app.channels_up import PLATFORMS
from bridge.audit import AuditChain
from bridge.audit.schema import schemas_for


async def worker(chain: AuditChain, tag: str, numbers: itertools.count, stop: int) -> None:
    for n in numbers:
        if stop and n >= stop:
            return
        ref = f"{ord(tag[0])}{n:06d}"  # a message id: digits only, as the schema wants
        seq = await chain.append("message.received", "alice", {"channel": "cli", "msg_id": ref})
        sys.stdout.write(f"{seq} {ref}\n")
        sys.stdout.flush()


async def main(path: Path, tag: str, count: int, concurrency: int) -> None:
    chain = AuditChain(path, schemas=schemas_for(PLATFORMS))  # as the daemon opens it
    await chain.open()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    numbers = itertools.count()
    await asyncio.gather(*(worker(chain, tag, numbers, count) for _ in range(concurrency)))
    await chain.aclose()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))

"""The daemon under a connection flood, next to the same daemon with no attack.

Starts `roost serve` (offline model) with RLIMIT_NOFILE set to `--limit`
(the shipped unit's `LimitNOFILE=4096`, or a proportionally lower one) and
prints, in one run on this machine, for each phase:

- no attack: `/healthz` latency (median, p95) over `--probes` requests;
- slowloris: `--n` sockets (default: the limit + 4) each send an unfinished
  request head and nothing more; `/healthz` latency while they are open,
  how long such a socket lives (connect to the daemon's close: median, max)
  and how many the daemon closed at all;
- event streams: `--n` `GET /api/events` with the page token: how many were
  opened (200) or refused (429, 503), and `/healthz` latency meanwhile;

and for each, the bytes the daemon wrote to its log (stderr). Latencies are
also given as a ratio to the no-attack median of the same run.

Run: `.venv/bin/python -m bench.web_flood [--limit 1024] [--n N] [--probes 50] [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIVE_S = 600.0  # a safety net against a hang


class Daemon:
    def __init__(self, proc: asyncio.subprocess.Process, port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log

    def log_bytes(self) -> int:
        return self.log.stat().st_size


async def start(home: Path, limit: int) -> Daemon:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    config = home.parent / "roost.toml"
    config.write_text("")
    env |= {
        "ROOST_HOME": str(home),
        "ROOST_CONFIG": str(config),
        "ROOST_WEB__PORT": "0",
        "ROOST_LLM__PROVIDER": "offline",
    }
    log = home.parent / "stderr.log"

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    with log.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bridge.cli.main",
            "serve",
            env=env,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=err,
            preexec_fn=lower,
        )
    assert proc.stdout is not None
    port = 0
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), LIVE_S)).decode()
        if not line:
            raise SystemExit(f"the daemon did not start:\n{log.read_text()[-2000:]}")
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        port = int(found.group(1)) if found else port
        if line.startswith("roost: model"):
            return Daemon(proc, port, log)


async def probe(port: int) -> float:
    """One `/healthz` on a fresh connection: seconds to the status line (inf: none)."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(LIVE_S):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            line = await reader.readline()
            writer.close()
    except (OSError, TimeoutError):
        return float("inf")
    return time.perf_counter() - started if line.startswith(b"HTTP/1.1 200") else float("inf")


async def probes(port: int, count: int) -> list[float]:
    return [await probe(port) for _ in range(count)]


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


async def lifetime(reader: asyncio.StreamReader, opened: float) -> float:
    await reader.read()
    return time.perf_counter() - opened


async def slowloris(daemon: Daemon, n: int, count: int) -> tuple[list[float], list[float]]:
    socks = []
    for _ in range(n):
        opened = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n")
        socks.append((reader, writer, opened))
    during = await probes(daemon.port, count)
    async with asyncio.timeout(LIVE_S):
        lives = await asyncio.gather(*(lifetime(r, t) for r, _, t in socks))
    for _, writer, _ in socks:
        writer.close()
    return during, lives


async def streams(
    daemon: Daemon, token: str, n: int, count: int
) -> tuple[dict[int, int], list[float]]:
    request = (
        f"GET /api/events?chat=c HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()
    held, statuses = [], {}
    for _ in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", daemon.port)
        writer.write(request)
        head = await asyncio.wait_for(reader.readline(), LIVE_S)
        status = int(head.split()[1]) if head.startswith(b"HTTP/") else 0
        statuses[status] = statuses.get(status, 0) + 1
        held.append(writer)
    during = await probes(daemon.port, count)
    for writer in held:
        writer.close()
    return statuses, during


async def main(limit: int, n: int, count: int, slowloris_too: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        daemon = await start(home, limit)
        token = (home / "web-token").read_text().strip()
        print(f"roost serve, RLIMIT_NOFILE {limit}, {n} attacking sockets, {count} probes each")
        base_log = daemon.log_bytes()
        quiet = await probes(daemon.port, count)
        floor = statistics.median(quiet)
        print(f"no attack:   /healthz {spread(quiet)}; log +{daemon.log_bytes() - base_log} B")

        if slowloris_too:
            before = daemon.log_bytes()
            during, lives = await slowloris(daemon, n, count)
            ratio = statistics.median(during) / floor
            print(
                f"slowloris:   /healthz {spread(during)} ({ratio:.1f}x the floor); "
                f"{sum(1 for v in during if v == float('inf'))} probes unanswered"
            )
            print(
                f"             a slowloris socket lives median {statistics.median(lives):.1f} s, "
                f"max {max(lives):.1f} s; all {len(lives)} closed by the daemon; "
                f"log +{daemon.log_bytes() - before} B"
            )
        else:
            print("slowloris:   skipped (--quick: each socket lives the daemon's header timeout)")

        before = daemon.log_bytes()
        statuses, during = await streams(daemon, token, n, count)
        ratio = statistics.median(during) / floor
        shown = ", ".join(f"{k or 'closed'}: {v}" for k, v in sorted(statuses.items()))
        print(
            f"streams:     {shown}; /healthz {spread(during)} ({ratio:.1f}x the floor); "
            f"log +{daemon.log_bytes() - before} B"
        )
        daemon.proc.terminate()
        await daemon.proc.wait()
        print(
            f"log in all:  {daemon.log_bytes()} B, {len(daemon.log.read_text().splitlines())} lines"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--limit", type=int, default=1024, help="RLIMIT_NOFILE of the daemon")
    parser.add_argument("--n", type=int, default=0, help="attacking sockets (default limit + 4)")
    parser.add_argument("--probes", type=int, default=50, help="/healthz requests per phase")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CI: it still runs)")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.n, args.probes = 128, 16, 5
    mine = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = args.n or args.limit + 4
    if mine[0] < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(mine[1], n * 2 + 64), mine[1]))
    asyncio.run(main(args.limit, n, args.probes, not args.quick))

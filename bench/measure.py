"""Measuring: per-call tallies and results, the shared window clock, workers in flight and CPU seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# ----------------------------------------------------------------------------- measuring


@dataclasses.dataclass
class Tally:
    """What the workers of one measurement saw: latencies of the calls inside the window (seconds),
    errors, rounds finished inside the window, and games created during the measurement."""

    latencies: list[float] = dataclasses.field(default_factory=list)
    errors: int = 0
    rounds: int = 0
    created: int = 0

    def add(self, other: Tally) -> None:
        self.latencies.extend(other.latencies)
        self.errors += other.errors
        self.rounds += other.rounds
        self.created += other.created

    def to_wire(self) -> tuple[list[float], int, int, int]:
        """Plain values, for the pipe from a client process."""
        return self.latencies, self.errors, self.rounds, self.created

    @classmethod
    def from_wire(cls, wire: tuple[list[float], int, int, int]) -> Tally:
        return cls(*wire)


@dataclasses.dataclass
class Result:
    rpc: str
    inflight: int
    seconds: float
    tally: Tally
    note: str = ""
    cpu: dict[str, float] = dataclasses.field(default_factory=dict)
    """CPU seconds per second of the window (1.0 = one core busy), by process group: client, server,
    redis, and for several workers each worker (``w0``, ``w1``...) and the supervisor."""
    connections: list[int] = dataclasses.field(default_factory=list)
    """Client connections held by each server worker during the measurement."""
    pair: int = 0
    """0: a row of the main table; k: the k-th extra Health/SubmitAction pair (``--goal-pairs``)."""

    @property
    def rate(self) -> float:
        return len(self.tally.latencies) / self.seconds if self.seconds > 0 else 0.0

    @property
    def games_rate(self) -> float:
        return self.tally.rounds / self.seconds if self.seconds > 0 else 0.0

    @property
    def errors(self) -> int:
        return self.tally.errors

    def quantile_ms(self, q: float) -> float:
        if not self.tally.latencies:
            return float("nan")
        ordered = sorted(self.tally.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Clock:
    """The measurement window: calls that start inside it and end before its end are counted.

    Its bounds are ``time.perf_counter`` values (the system-wide monotonic clock on Linux), so a
    window chosen here holds in the client processes too."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    @classmethod
    def after(cls, warmup: float, seconds: float) -> Clock:
        start = time.perf_counter() + warmup
        return cls(start, start + seconds)

    def over(self) -> bool:
        return time.perf_counter() >= self.end

    def inside(self, started: float, ended: float) -> bool:
        return started >= self.start and ended <= self.end


Worker = Callable[[int, Clock, Tally], Awaitable[None]]
"""A worker: (index, window, tally out); it loops until the window closes."""


async def timed(call: Awaitable[Any], clock: Clock, out: Tally) -> tuple[Any, bool]:
    """Await ``call``; record its latency if it fell inside the window (and say whether it did)."""
    started = time.perf_counter()
    response = await call
    ended = time.perf_counter()
    inside = clock.inside(started, ended)
    if inside:
        out.latencies.append(ended - started)
    return response, inside


async def run_workers(inflight: int, clock: Clock, worker: Worker) -> Tally:
    """Run ``inflight`` copies of ``worker`` until the window closes."""
    tallies = [Tally() for _ in range(inflight)]
    await asyncio.gather(*(worker(i, clock, tallies[i]) for i in range(inflight)))
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``; this process's own for ``None``)."""
    if pid is None:
        return time.process_time()
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def cpu_during(clock: Clock, groups: dict[str, list[int | None]]) -> dict[str, float]:
    """CPU seconds per second of each group of processes over the window (the processes of a group
    alive at both ends; ``None`` is this process)."""
    await asyncio.sleep(max(0.0, clock.start - time.perf_counter()))
    before = {name: {pid: cpu_seconds(pid) for pid in pids} for name, pids in groups.items()}
    await asyncio.sleep(max(0.0, clock.end - time.perf_counter()))
    out: dict[str, float] = {}
    for name, starts in before.items():
        total, seen = 0.0, False
        for pid, start in starts.items():
            end = cpu_seconds(pid)
            if start is not None and end is not None:
                total, seen = total + end - start, True
        if seen:
            out[name] = total / (clock.end - clock.start)
    return out

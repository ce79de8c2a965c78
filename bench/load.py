"""The load: games made ahead, the SubmitAction / GetGame / Health workers, and the load generator
spread over client processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import random
import signal
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from gostop.engine import Rules, State, action_from_id, apply_unchecked, legal_action_ids, new_match
from gostop.v1 import game_pb2 as pb
from gostop.v1 import game_pb2_grpc as pb_grpc

from .measure import Clock, Tally, Worker, run_workers, timed
from .processes import connections_by_pid
from .settings import CALL_TIMEOUT, CHANNEL_OPTIONS, OPERATOR, PLAYERS, PRESET, Metadata

# ----------------------------------------------------------------------------- games


@dataclasses.dataclass
class Game:
    """A game on the server, mirrored locally from its seed."""

    game_id: str
    seats: list[Metadata]
    version: int
    state: State


class Games:
    """Creates standard 2-player games with known seeds and hands them out to workers."""

    def __init__(self, stub: Any, seed: int) -> None:
        self.stub = stub
        self.rules = Rules.preset(PRESET, players=PLAYERS)
        self.seeds = random.Random(seed)
        self.ready: deque[Game] = deque()
        self.known: list[Game] = []
        self.created_inline = 0

    async def create(self) -> Game:
        seed = self.seeds.getrandbits(63)
        response = await self.stub.CreateGame(
            pb.CreateGameRequest(preset=PRESET, players=PLAYERS, seed=seed), timeout=CALL_TIMEOUT,
            metadata=OPERATOR,
        )
        match, _ = new_match(self.rules, seed, 1)
        seats: list[Metadata] = [(("authorization", "Bearer " + s.token),) for s in response.seats]
        game = Game(response.game_id, seats, response.version, match.round)
        self.known.append(game)
        return game

    async def prepare(self, count: int, parallel: int = 8) -> None:
        async def some(n: int) -> None:
            for _ in range(n):
                self.ready.append(await self.create())

        share, extra = divmod(count, parallel)
        await asyncio.gather(*(some(share + (i < extra)) for i in range(parallel)))

    async def take(self) -> Game:
        if self.ready:
            return self.ready.popleft()
        self.created_inline += 1
        return await self.create()


def submit_worker(games: Games, tag: str, verify: bool = True) -> Worker:
    """``verify``: check each answer's next seat against the worker's mirror of the game (off for
    ``--domain-free``, whose server does not move its games)."""
    stub = games.stub

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        chooser = random.Random(index)
        n = 0
        game = await games.take()
        while not clock.over():
            if game.state.over:
                game = await games.take()
                continue
            seat = game.state.to_move
            choice = chooser.choice(legal_action_ids(game.state))
            n += 1
            request = pb.SubmitActionRequest(
                game_id=game.game_id, expected_version=game.version, request_id=f"{tag}-{index}-{n}",
                action_id=choice,
            )
            call = stub.SubmitAction(request, metadata=game.seats[seat], timeout=CALL_TIMEOUT)
            try:
                response, inside = await timed(call, clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1
                game = await games.take()
                continue
            game.state, _ = apply_unchecked(game.state, action_from_id(choice))
            game.version = response.result.version
            if game.state.over:
                out.rounds += inside
            elif verify and response.result.view.to_move != game.state.to_move:
                raise RuntimeError(f"game {game.game_id}: the server and the local mirror disagree")

    return worker


def get_worker(games: Games) -> Worker:
    stub = games.stub

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        chooser = random.Random(1000 + index)
        while not clock.over():
            game = chooser.choice(games.known)
            seat = chooser.randrange(PLAYERS)
            try:
                request = pb.GetGameRequest(game_id=game.game_id)
                await timed(stub.GetGame(request, metadata=game.seats[seat], timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1

    return worker


def health_worker(stub: Any) -> Worker:
    request = health_pb2.HealthCheckRequest(service="")

    async def worker(index: int, clock: Clock, out: Tally) -> None:
        while not clock.over():
            try:
                await timed(stub.Check(request, timeout=CALL_TIMEOUT), clock, out)
            except grpc.aio.AioRpcError:
                out.errors += 1

    return worker


def game_stub(channel: grpc.aio.Channel) -> Any:
    return pb_grpc.GameServiceStub(channel)


def spread(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal shares, the larger ones first."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@dataclasses.dataclass(frozen=True)
class Balance:
    """What a client needs to spread its connections evenly over the server's workers."""

    port: int
    pids: tuple[int, ...]
    channels: int
    """Channels of the whole load generator (all its processes)."""


class LoadGen:
    """The load of one client process: its channels, a game pool per channel, and the workers of
    one measurement spread over the channels."""

    def __init__(
        self, target: str, channels: int, games: int, seed: int, balance: Balance | None = None, verify: bool = True,
    ) -> None:
        self.target = target
        self.verify = verify
        self.balance = balance
        self.count = channels
        self.games = games
        self.seed = seed
        self.channels: list[grpc.aio.Channel] = []
        self.pools: list[Games] = []
        self.per: list[int] = []
        self.tag = ""

    async def open(self) -> None:
        """Open the channels. With ``balance``, a channel whose connection went to a worker that
        already holds its share of all the client's connections is closed and opened again (the
        kernel hashes each connection to one worker: a few connections often land unevenly)."""
        attempts = 0
        while len(self.channels) < self.count:
            before = connections_by_pid(self.balance.port, self.balance.pids) if self.balance else []
            channel = grpc.aio.insecure_channel(self.target, options=CHANNEL_OPTIONS)
            await channel.channel_ready()
            attempts += 1
            if self.balance is not None and attempts < 20 * self.count:
                after = connections_by_pid(self.balance.port, self.balance.pids)
                gained = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if b > a]
                share = -(-self.balance.channels // len(self.balance.pids))
                if len(gained) == 1 and after[gained[0]] > share:
                    await channel.close()
                    continue
            self.channels.append(channel)

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()

    async def prepare(self, inflight: int) -> None:
        """Spread ``inflight`` workers over the channels; create each channel's games beforehand."""
        self.per = spread(inflight, len(self.channels))
        self.tag = f"s{self.seed}-f{inflight}"
        self.pools = [Games(game_stub(c), seed=self.seed * 1_000_003 + inflight * 100 + i)
                      for i, c in enumerate(self.channels)]
        for pool, count in zip(self.pools, self.per, strict=True):
            await pool.prepare(max(self.games // len(self.channels), 2 * count))

    async def run(self, rpc: str, clock: Clock) -> Tally:
        workers: list[tuple[int, Worker]]
        if rpc == "health":
            workers = [(n, health_worker(health_pb2_grpc.HealthStub(c)))
                       for n, c in zip(self.per, self.channels, strict=True)]
        elif rpc == "submit":
            workers = [(n, submit_worker(pool, f"{self.tag}-c{i}", self.verify))
                       for i, (n, pool) in enumerate(zip(self.per, self.pools, strict=True))]
        else:
            workers = [(n, get_worker(pool)) for n, pool in zip(self.per, self.pools, strict=True)]
        created = sum(p.created_inline for p in self.pools)
        done = await asyncio.gather(*(run_workers(n, clock, worker) for n, worker in workers if n))
        total = Tally(created=sum(p.created_inline for p in self.pools) - created)
        for tally in done:
            total.add(tally)
        return total


def _client_process(
    conn: Connection, target: str, channels: int, games: int, seed: int, balance: Balance | None, verify: bool
) -> None:
    """A client process (``--client-processes``): runs the parent's commands on its own LoadGen."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C and stops the children

    async def serve() -> None:
        load = LoadGen(target, channels, games, seed, balance, verify)
        await load.open()
        loop = asyncio.get_running_loop()
        try:
            while True:
                command = await loop.run_in_executor(None, conn.recv)
                if command[0] == "prepare":
                    await load.prepare(command[1])
                    conn.send(None)
                elif command[0] == "run":
                    tally = await load.run(command[1], Clock(command[2], command[3]))
                    conn.send(tally.to_wire())
                else:
                    return
        finally:
            await load.close()

    asyncio.run(serve())


class Clients:
    """The load generator: one LoadGen in this process, or one in each of ``processes`` child
    processes (spawned, each with its own event loop, channels and games), driven in step."""

    def __init__(
        self, target: str, channels: int, processes: int, games: int, balance: Balance | None, verify: bool = True,
    ) -> None:
        self.target = target
        self.verify = verify
        self.balance = balance
        self.processes = processes
        self.channels = spread(max(channels, processes), processes)
        self.games = games
        self.local: LoadGen | None = None
        self.children: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        self.shares: list[int] = []

    async def open(self) -> None:
        if self.processes == 1:
            self.local = LoadGen(self.target, self.channels[0], self.games, seed=1, balance=self.balance,
                                 verify=self.verify)
            await self.local.open()
            return
        context = multiprocessing.get_context("spawn")
        for i, channels in enumerate(self.channels):
            parent, child = context.Pipe()
            process = context.Process(
                target=_client_process,
                args=(child, self.target, channels, self.games // self.processes + 1, i + 1, self.balance,
                      self.verify),
                daemon=True,
            )
            process.start()
            child.close()
            self.children.append((process, parent))

    async def _ask(self, conn: Connection, command: tuple[Any, ...]) -> Any:
        conn.send(command)
        return await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    async def prepare(self, inflight: int) -> None:
        if self.local is not None:
            await self.local.prepare(inflight)
            return
        self.shares = spread(inflight, self.processes)
        await asyncio.gather(*(self._ask(conn, ("prepare", share))
                               for share, (_, conn) in zip(self.shares, self.children, strict=True) if share))

    async def run(self, rpc: str, clock: Clock) -> Tally:
        if self.local is not None:
            return await self.local.run(rpc, clock)
        wires = await asyncio.gather(*(self._ask(conn, ("run", rpc, clock.start, clock.end))
                                       for share, (_, conn) in zip(self.shares, self.children, strict=True) if share))
        total = Tally()
        for wire in wires:
            total.add(Tally.from_wire(wire))
        return total

    def pids(self) -> list[int | None]:
        """The client's processes (``None``: this one)."""
        return [None, *(p.pid for p, _ in self.children if p.pid is not None)]

    async def close(self) -> None:
        if self.local is not None:
            await self.local.close()
        for _, conn in self.children:
            with contextlib.suppress(OSError):
                conn.send(("stop",))
        for process, conn in self.children:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
            conn.close()

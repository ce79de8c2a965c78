"""Make the preset dictionaries of the store's compact form (``service/compact.py``), once per version.

Plays seeded games of every preset and table size through the service's domain layer (the memory
store, random legal actions, a request id on every action), records the plain snapshots, log
entries and stored responses the service writes, and writes for each kind a dictionary of
``--size`` bytes: the values of all presets one after another, the commonest table (standard,
two players) last, where deflate reaches it at the shortest distances.

A dictionary is part of the stored format: values written with it can only be read with the same
bytes. So this runs to make a *new* version (``--version 2``), never to redo one in use; the
digests of the shipped files are pinned in ``service/compact.py``.

Usage: ``.venv/bin/python scripts/train_dictionaries.py --version N [--size 8192] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
from pathlib import Path

from gostop.engine import PRESET_PLAYERS
from gostop.service import compact
from gostop.service.auth import Caller
from gostop.service.config import Config
from gostop.service.server import Server
from gostop.v1 import game_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
TABLES = [(preset, players) for preset, counts in PRESET_PLAYERS.items() for players in sorted(counts)]


async def samples(games_per_table: int) -> dict[str, list[list[bytes]]]:
    """Per kind, the plain values of each table's games (the list of tables in ``TABLES`` order)."""
    recorded: dict[str, list[bytes]] = {kind: [] for kind in compact.KINDS}

    def record(kind: compact.Kind, data: bytes) -> bytes:
        recorded[kind].append(data)
        return data

    compact.pack = record
    server = Server(Config(listen="127.0.0.1:0", http_listen="off", metrics_port=0, token_secret="t" * 32,
                           operator_keys="operator"))
    games = server.games
    operator = Caller(None, None, True, True)
    out: dict[str, list[list[bytes]]] = {kind: [] for kind in compact.KINDS}
    for number, (preset, players) in enumerate(TABLES):
        rng = random.Random(number)
        for index in range(games_per_table):
            created = await games.create(pb.CreateGameRequest(preset=preset, players=players, seed=index + 1),
                                         operator)
            for step in range(200):
                nobody = Caller(None, None, False, False)
                spectator = await games.get(pb.GetGameRequest(game_id=created.game_id), nobody)
                if spectator.view.phase == pb.PHASE_OVER:
                    break
                seat = Caller(created.game_id, spectator.view.to_move, False, False)
                own = await games.get(pb.GetGameRequest(game_id=created.game_id), seat)
                await games.submit(pb.SubmitActionRequest(
                    game_id=created.game_id, expected_version=own.version, request_id=f"train-{step}",
                    action_id=rng.choice(own.view.legal_actions).id), seat)
        for kind in compact.KINDS:
            out[kind].append(recorded[kind])
            recorded[kind] = []
    return out


def dictionary(tables: list[list[bytes]], size: int) -> bytes:
    """Values of every table, taken in turn, the standard two-player table's last, cut to ``size``."""
    common = TABLES.index(("standard", 2))
    order = [t for t in range(len(tables)) if t != common] + [common]
    picked: list[bytes] = []
    total = 0
    depth = 0
    while total < size * 2 and depth < max(len(t) for t in tables):
        for t in order:
            values = tables[t]
            if depth < len(values):
                value = values[len(values) // 2 + depth // 2 if depth % 2 else depth // 2]
                picked.append(value)
                total += len(value)
        depth += 1
    return b"".join(picked)[-size:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", type=int, required=True)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--games", type=int, default=6, help="games per preset and table size")
    parser.add_argument("--out", type=Path, default=ROOT / "service" / "dictionaries")
    args = parser.parse_args()
    tables = asyncio.run(samples(args.games))
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in compact.KINDS:
        data = dictionary(tables[kind], args.size)
        path = args.out / f"v{args.version}-{kind}.bin"
        path.write_bytes(data)
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {len(data)} bytes, "
              f"sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main()

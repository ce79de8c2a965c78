"""The duplicate-deal schedule: which cards game *i* of a table is played on, for the in-process
arena and for ``gostop tournament`` alike.

Deal ``index`` of a table (preset, number of players) under a run's ``seed`` is the round the
engine deals from ``deal_seed(seed, preset, players, index)``: a 64-bit hash, so the same run seed
gives the same deals on every machine and in every version, and two tables (or two presets) never
share a deal by accident. Every seating of a deal plays those same cards, so that luck of the deal
cancels out between the bots compared.

>>> deal_seed(0, "standard", 2, 0) == deal_seed(0, "standard", 2, 0) != deal_seed(0, "standard", 2, 1)
True
>>> rotate(("a", "b", "c"), 1)
('b', 'c', 'a')
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["deal_seed", "derive_seed", "rotate"]


def derive_seed(*parts: object) -> int:
    """A 64-bit seed from any parts (stable across runs, machines and Python versions)."""
    text = ":".join(str(p) for p in ("gostop-tournament", *parts))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def deal_seed(seed: int, preset: str, players: int, index: int) -> int:
    """The engine seed of deal ``index`` of a preset and table size under the run seed ``seed``."""
    return derive_seed(seed, preset, players, index)


def rotate(lineup: Sequence[str], rotation: int) -> tuple[str, ...]:
    """The seating of ``lineup`` turned by ``rotation`` seats: seat s gets ``lineup[(s + rotation) % n]``."""
    n = len(lineup)
    return tuple(lineup[(s + rotation) % n] for s in range(n))

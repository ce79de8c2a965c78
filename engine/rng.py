"""The engine's own deterministic random generator.

Shuffles must be identical on every platform and every Python version, and other
languages must be able to reproduce them, so the engine does not use ``random``.
SplitMix64 is tiny, well studied and trivial to port.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
_MASK = (1 << 64) - 1
_SPAN = 1 << 64
_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


class Rng:
    """SplitMix64 with unbiased bounded draws (rejection sampling).

    >>> Rng(1).next_u64() == Rng(1).next_u64()
    True
    >>> Rng(42).shuffled(range(5))
    [1, 2, 0, 4, 3]
    """

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next_u64(self) -> int:
        """The next 64-bit output."""
        self._state = (self._state + _GAMMA) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * _MIX1) & _MASK
        z = ((z ^ (z >> 27)) * _MIX2) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def shuffled(self, items: Sequence[T] | range) -> list[T]:
        """A Fisher-Yates shuffle of ``items`` (the input is not modified).

        The generator is inlined here (same outputs as ``below``, rejection bounds from a
        table): deals are on the hot path of every simulated round.
        """
        out = list(items)
        state = self._state
        limits = _LIMITS if len(out) < len(_LIMITS) else _limits(len(out) + 1)
        for i in range(len(out) - 1, 0, -1):
            n = i + 1
            limit = limits[n]
            state = (state + _GAMMA) & _MASK
            z = ((state ^ (state >> 30)) * _MIX1) & _MASK
            z = ((z ^ (z >> 27)) * _MIX2) & _MASK
            z ^= z >> 31
            while z >= limit:  # rejected: probability below n / 2^64
                state = (state + _GAMMA) & _MASK
                z = ((state ^ (state >> 30)) * _MIX1) & _MASK
                z = ((z ^ (z >> 27)) * _MIX2) & _MASK
                z ^= z >> 31
            j = z % n
            out[i], out[j] = out[j], out[i]
        self._state = state
        return out  # type: ignore[return-value]


def _limits(size: int) -> tuple[int, ...]:
    """Rejection bounds of ``below(n)`` for n < size (index 0 unused)."""
    return (0,) + tuple(_SPAN - (_SPAN % n) for n in range(1, size))


_LIMITS = _limits(64)

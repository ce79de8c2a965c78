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
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
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
        """A Fisher-Yates shuffle of ``items`` (the input is not modified)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out  # type: ignore[return-value]

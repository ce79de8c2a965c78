"""Settlement of a round: who pays whom, and why, factor by factor."""

from __future__ import annotations

from dataclasses import dataclass

from .scoring import Score


@dataclass(frozen=True, slots=True)
class Factor:
    """One named factor of a settlement: a multiplier (×value) or points."""

    name: str
    value: int


@dataclass(frozen=True, slots=True)
class Payment:
    """An instant point transfer of the round (첫뻑, 연뻑, 첫따닥, 광팔기)."""

    payer: int
    payee: int
    points: int
    reason: str


@dataclass(frozen=True, slots=True)
class Bill:
    """What one losing seat owes the winner."""

    seat: int
    factors: tuple[Factor, ...]
    """This loser's own multipliers (피박, 광박, 고박, ...)."""
    points: int
    """go score × winner multipliers × this loser's multipliers."""
    pays: int
    """Points actually paid (3-player 고박 moves one loser's bill to the other)."""
    covers: tuple[int, ...]
    """Seats whose bill this seat pays (itself included when it pays its own)."""


@dataclass(frozen=True, slots=True)
class Settlement:
    """The end of a round, explained.

    ``outcome`` is ``stop`` (a seat stopped), ``best_score`` (arcade: highest score when
    the cards ran out), ``instant_win``, ``instant_loss`` or ``nagari``.
    """

    outcome: str
    reason: str
    winner: int
    """-1 for 나가리."""
    score: Score | None
    base: int
    gos: int
    go_score: int
    winner_factors: tuple[Factor, ...]
    bills: tuple[Bill, ...]
    payments: tuple[Payment, ...]
    """Every instant payment of the round (already paid when they happened)."""
    points: tuple[int, ...]
    """Net points of each seat for the round, instant payments included."""
    money: tuple[int, ...]
    """``points`` × the point value."""
    point_value: int
    carry_next: bool
    """The next round of the match is ×2 (나가리 carry)."""

    @property
    def is_draw(self) -> bool:
        return self.winner < 0

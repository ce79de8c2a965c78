"""Settlement of a round: who pays whom, and why, factor by factor."""

from __future__ import annotations

from dataclasses import dataclass

from .scoring import Score


@dataclass(frozen=True, slots=True, init=False)
class Factor:
    """One named factor of a settlement: a multiplier (×value) or points."""

    name: str
    value: int

    def __init__(self, name: str, value: int) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "value", value)


@dataclass(frozen=True, slots=True, init=False)
class Payment:
    """An instant point transfer of the round (첫뻑, 연뻑, 첫따닥, 광팔기)."""

    payer: int
    payee: int
    points: int
    reason: str

    def __init__(self, payer: int, payee: int, points: int, reason: str) -> None:
        object.__setattr__(self, "payer", payer)
        object.__setattr__(self, "payee", payee)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "reason", reason)


@dataclass(frozen=True, slots=True, init=False)
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

    def __init__(self, seat: int, factors: tuple[Factor, ...], points: int, pays: int, covers: tuple[int, ...]) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "factors", factors)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "pays", pays)
        object.__setattr__(self, "covers", covers)


@dataclass(frozen=True, slots=True, init=False)
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

    def __init__(
        self,
        outcome: str, reason: str, winner: int, score: Score | None, base: int, gos: int, go_score: int,
        winner_factors: tuple[Factor, ...], bills: tuple[Bill, ...], payments: tuple[Payment, ...],
        points: tuple[int, ...], money: tuple[int, ...], point_value: int, carry_next: bool,
    ) -> None:
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "winner", winner)
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "gos", gos)
        object.__setattr__(self, "go_score", go_score)
        object.__setattr__(self, "winner_factors", winner_factors)
        object.__setattr__(self, "bills", bills)
        object.__setattr__(self, "payments", payments)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "money", money)
        object.__setattr__(self, "point_value", point_value)
        object.__setattr__(self, "carry_next", carry_next)

    @property
    def is_draw(self) -> bool:
        return self.winner < 0
